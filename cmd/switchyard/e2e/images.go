//go:build linux

package e2e

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// No registry is reachable and no Docker engine runs here: the real node's
// images are written by the test as one docker-archive tarball (what
// `docker save` writes, `ctr images import` reads), each image a single
// layer of files taken from this machine.

// imageFile is one file of an image's layer.
type imageFile struct {
	Path   string // inside the image, absolute
	Source string // a file of this machine to copy (its mode kept)
	Link   string // or: a symbolic link to this target
	Dir    bool   // or: an empty directory, writable by all (/tmp)
	Text   string // or: a file of this text (mode 0644)
}

// imageSpec is one image.
type imageSpec struct {
	Ref        string
	Entrypoint []string
	Cmd        []string
	Files      []imageFile
}

// writeImages writes the images, each tagged with its Ref, to one tarball.
func writeImages(out string, specs ...imageSpec) error {
	refs := map[name.Reference]v1.Image{}
	for _, s := range specs {
		ref, err := name.NewTag(s.Ref)
		if err != nil {
			return err
		}
		layerTar, err := layerOf(s.Files)
		if err != nil {
			return fmt.Errorf("image %s: %w", s.Ref, err)
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(layerTar)), nil
		})
		if err != nil {
			return err
		}
		img, err := mutate.AppendLayers(empty.Image, layer)
		if err != nil {
			return err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
		cfg.Config.Entrypoint, cfg.Config.Cmd = s.Entrypoint, s.Cmd
		cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return err
		}
		refs[ref] = img
	}
	return tarball.MultiRefWriteToFile(out, refs)
}

// layerOf is a layer tarball of the files, with their parent directories,
// owned by root, sorted by path; of two files with one path, the first.
func layerOf(files []imageFile) ([]byte, error) {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dirs := map[string]bool{"/": true}
	var mkdirs func(string) error
	mkdirs = func(d string) error {
		if dirs[d] {
			return nil
		}
		if err := mkdirs(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: mtime})
	}
	seen := map[string]bool{}
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("%s: not an absolute path", f.Path)
		}
		if seen[f.Path] {
			continue
		}
		seen[f.Path] = true
		if err := mkdirs(path.Dir(f.Path)); err != nil {
			return nil, err
		}
		if f.Dir {
			dirs[f.Path] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: f.Path[1:] + "/", Mode: 0o1777, ModTime: mtime}); err != nil {
				return nil, err
			}
			continue
		}
		if f.Link != "" {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: f.Path[1:], Linkname: f.Link, Mode: 0o777, ModTime: mtime}); err != nil {
				return nil, err
			}
			continue
		}
		b, mode, err := f.contents()
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path[1:], Mode: mode, Size: int64(len(b)), ModTime: mtime}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// contents is a regular file's bytes and mode: its Text, or its Source's.
func (f imageFile) contents() ([]byte, int64, error) {
	if f.Source == "" {
		return []byte(f.Text), 0o644, nil
	}
	b, err := os.ReadFile(f.Source)
	if err != nil {
		return nil, 0, err
	}
	st, err := os.Stat(f.Source)
	if err != nil {
		return nil, 0, err
	}
	return b, int64(st.Mode().Perm()), nil
}

var lddPath = regexp.MustCompile(`(/\S+) \(0x`)

// hostFilesFor is a binary of this machine and the shared libraries it
// loads (from ldd), each symbolic link with its target: how the Linux
// image gets Debian's nft, as the Dockerfile's apt-get does.
func hostFilesFor(binary string) ([]imageFile, error) {
	out, err := exec.Command("ldd", binary).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", binary, err)
	}
	var files []imageFile
	add := func(p string) error {
		for i := 0; i < 10; i++ {
			st, err := os.Lstat(p)
			if err != nil {
				return err
			}
			if st.Mode()&os.ModeSymlink == 0 {
				files = append(files, imageFile{Path: p, Source: p})
				return nil
			}
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			files = append(files, imageFile{Path: p, Link: target})
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			p = target
		}
		return fmt.Errorf("%s: too many links", p)
	}
	if err := add(binary); err != nil {
		return nil, err
	}
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		if err := add(m[1]); err != nil {
			return nil, err
		}
	}
	return files, nil
}
