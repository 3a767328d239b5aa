// Package app is the switchyard command as a library: a third-party module
// registers its driver with dataplanes.Register in an init function and
// calls app.Main from its own main package to get the same command, flags
// and servers with its driver built in (see examples/file-export).
package app
