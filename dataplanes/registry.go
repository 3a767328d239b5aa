package dataplanes

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

var (
	mu        sync.RWMutex
	factories = map[string]Factory{}
	validName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)
)

// Register makes a driver available under name; call it from an init
// function. Registering a name twice, or an invalid name, panics: it is a
// programming error that must fail at start, not at the first sync.
func Register(name string, f Factory) {
	if err := register(name, f); err != nil {
		panic(err)
	}
}

func register(name string, f Factory) error {
	mu.Lock()
	defer mu.Unlock()
	if !validName.MatchString(name) {
		return fmt.Errorf("dataplanes: driver name %q must be lower-case letters, digits and dashes, starting with a letter", name)
	}
	if f == nil {
		return fmt.Errorf("dataplanes: driver %q registered with a nil factory", name)
	}
	if _, dup := factories[name]; dup {
		return fmt.Errorf("dataplanes: driver %q registered twice", name)
	}
	factories[name] = f
	return nil
}

// Get returns the factory registered under name, or an error that lists
// the names that are registered.
func Get(name string) (Factory, error) {
	mu.RLock()
	defer mu.RUnlock()
	if f, ok := factories[name]; ok {
		return f, nil
	}
	known := namesLocked()
	if len(known) == 0 {
		return nil, fmt.Errorf("unknown dataplane %q: this binary has no drivers registered", name)
	}
	return nil, fmt.Errorf("unknown dataplane %q (known: %s)", name, strings.Join(known, ", "))
}

// Names lists the registered drivers, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	out := make([]string, 0, len(factories))
	for n := range factories {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
