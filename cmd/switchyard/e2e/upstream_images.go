//go:build linux

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The images upstream's e2e specs run, under the exact names of
// test/utils/image/manifest.go of the e2e.test release (v1.36.4), written
// from this machine's files as the real node's are:
//   - agnhost: upstream's binary, with the tools its Alpine image carries
//     that the networking specs call (nc from netcat-openbsd, nslookup and
//     dig, curl, wget, ip, bash, getent) taken from Debian with their libraries,
//     dash as /bin/sh (Debian's static busybox as /bin/sh would run its
//     own applets, whose nc has no -v, ahead of PATH), and busybox's
//     applets for the rest of what Alpine's /bin holds (specs exec
//     /bin/sleep in a preStop hook and /bin/false as a probe);
//   - glibc-dns-testing (upstream's is Debian with dnsutils and CoreDNS):
//     the same Debian tools as agnhost's, and CoreDNS;
//   - busybox: Debian's static busybox with a link for every applet;
//   - nginx: Debian's nginx (hack/ensure-e2e.sh unpacks it) with its
//     libraries and a configuration of ours serving its welcome page on
//     port 80, as upstream's image does;
//   - pause: the real node's pause (the test application's pause command);
//   - coredns: hack/coredns, for the cluster's kube-dns.
const (
	agnhostImage      = "registry.k8s.io/e2e-test-images/agnhost:2.63.0"
	busyboxImage      = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
	nginxImage        = "registry.k8s.io/e2e-test-images/nginx:1.15-4"
	glibcDNSImage     = "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.0.0"
	upstreamPause     = "registry.k8s.io/pause:3.10.2"
	corednsImage      = "switchyard.local/coredns:e2e"
	agnhostImageTools = "nc nslookup dig curl wget ip bash dash getent"
)

// upstreamImages are the specs' images, from the binaries in bins
// (hack/ensure-e2e.sh) and the pause binary the node's images use.
func upstreamImages(t testing.TB, bins, pause string) []imageSpec {
	t.Helper()
	agnhost := append([]imageFile{
		{Path: "/agnhost", Source: filepath.Join(bins, "agnhost")},
		{Path: "/agnhost-2", Link: "agnhost"},
		{Path: "/coredns", Source: filepath.Join(bins, "coredns")},
		{Path: "/uploads", Dir: true},
		// porter's TLS certificate and key, in its working directory.
		{Path: "/localhost.crt", Source: filepath.Join(bins, "porter/localhost.crt")},
		{Path: "/localhost.key", Source: filepath.Join(bins, "porter/localhost.key")},
	}, debianTools(t)...)
	dnsTesting := append([]imageFile{{Path: "/coredns", Source: filepath.Join(bins, "coredns")}}, debianTools(t)...)
	return []imageSpec{
		{Ref: agnhostImage, Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Files: agnhost},
		{Ref: busyboxImage, Cmd: []string{"sh"}, Files: busyboxFiles(t)},
		{Ref: glibcDNSImage, Cmd: []string{"sh"}, Files: dnsTesting},
		{Ref: nginxImage, Entrypoint: []string{"/usr/sbin/nginx", "-g", "daemon off;"}, Files: nginxFiles(t, filepath.Join(bins, "nginx"))},
		{Ref: upstreamPause, Entrypoint: []string{"/pause", "pause"}, Files: []imageFile{{Path: "/pause", Source: pause}}},
		{Ref: corednsImage, Entrypoint: []string{"/coredns"}, Files: []imageFile{{Path: "/coredns", Source: filepath.Join(bins, "coredns")}}},
	}
}

// debianTools are the tools the agnhost and glibc-dns-testing images
// carry, from this machine with their libraries: dash as /bin/sh, then
// Debian's nc, nslookup, dig, curl, wget, ip, bash and glibc's getent,
// then busybox's applets for the rest (the first file of a path wins in layerOf).
func debianTools(t testing.TB) []imageFile {
	t.Helper()
	tools := []imageFile{{Path: "/bin/sh", Link: "/usr/bin/dash"}, {Path: "/tmp", Dir: true}}
	for _, name := range strings.Fields(agnhostImageTools) {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("the agnhost image needs %s (hack/ensure-e2e.sh installs it): %v", name, err)
		}
		path, _ = filepath.EvalSymlinks(path)
		files, err := hostFilesFor(path)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, files...)
		tools = append(tools, imageFile{Path: "/usr/bin/" + name, Source: path}, imageFile{Path: "/bin/" + name, Link: "/usr/bin/" + name})
	}
	return append(tools, busyboxFiles(t)...)
}

// busyboxFiles are Debian's static busybox as /bin/busybox and a link in
// /bin for each of its applets.
func busyboxFiles(t testing.TB) []imageFile {
	t.Helper()
	path, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatalf("the busybox image needs Debian's busybox-static (hack/ensure-e2e.sh installs it): %v", err)
	}
	out, err := exec.Command(path, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	files := []imageFile{{Path: "/bin/busybox", Source: path}, {Path: "/tmp", Dir: true}}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			files = append(files, imageFile{Path: "/bin/" + applet, Link: "busybox"})
		}
	}
	if len(files) < 50 {
		t.Fatalf("busybox lists %d applets: not the static busybox", len(files))
	}
	return files
}

// nginxConf serves the welcome page on port 80 and logs to the
// container's output, as upstream's nginx image does.
const nginxConf = `user root;
worker_processes 1;
error_log /dev/stderr;
pid /run/nginx.pid;
events { worker_connections 512; }
http {
    access_log /dev/stdout;
    server {
        listen 80;
        root /usr/share/nginx/html;
    }
}
`

// nginxFiles are Debian's nginx binary with its libraries, its
// configuration, and the directories it writes.
func nginxFiles(t testing.TB, binary string) []imageFile {
	t.Helper()
	files, err := hostFilesFor(binary)
	if err != nil {
		t.Fatal(err)
	}
	files[0].Path = "/usr/sbin/nginx" // hostFilesFor's first is the binary itself
	return append(files,
		imageFile{Path: "/etc/nginx/nginx.conf", Text: nginxConf},
		imageFile{Path: "/usr/share/nginx/html/index.html", Text: "<h1>Welcome to nginx!</h1>\n"},
		imageFile{Path: "/etc/passwd", Text: "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"},
		imageFile{Path: "/etc/group", Text: "root:x:0:\nnogroup:x:65534:\n"},
		imageFile{Path: "/var/lib/nginx", Dir: true}, imageFile{Path: "/var/log/nginx", Dir: true},
		imageFile{Path: "/run", Dir: true}, imageFile{Path: "/tmp", Dir: true})
}
