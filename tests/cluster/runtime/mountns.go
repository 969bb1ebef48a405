package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// A container of an image with mountNS runs in a mount namespace of its own: the runtime
// starts itself as `rdc-pod-runtime __mount-exec SPEC -- ARGV...` with CLONE_NEWNS (Go
// makes / private in the child), and that helper bind-mounts every volume at its real
// mountPath, then execs ARGV (same pid). A mountPath whose parent does not exist on the
// machine gets a tmpfs over its deepest existing ancestor inside the namespace (never over
// "/"), so nothing is created on the machine's filesystem; over /dev that tmpfs is a
// private copy of the machine's /dev (mirrorTmpfs: the devices are still there), which is
// how the termination message file gets to /dev/termination-log (termination.go). It also gets a UTS namespace
// whose hostname is the pod's name (leader election identities differ per pod). Needs
// CAP_SYS_ADMIN (root).
type nsSpec struct {
	Mounts   []nsMount `json:"mounts"`
	Dir      string    `json:"dir"`
	Hostname string    `json:"hostname"` // a UTS namespace too: the pod's name, as in a pod
}

type nsMount struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

const oPath = 0x200000 // O_PATH

func mountExecMain(args []string) {
	fail := func(f string, a ...interface{}) {
		fmt.Fprintf(os.Stderr, "rdc-pod-runtime mount-exec: "+f+"\n", a...)
		os.Exit(128)
	}
	if len(args) < 3 || args[1] != "--" {
		fail("usage: __mount-exec SPEC -- ARGV...")
	}
	var spec nsSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		fail("spec: %v", err)
	}
	argv := args[2:]
	// A tmpfs over a missing mountPath's ancestor (below) hides what else is there: the
	// executable's directory and the working directory stay visible through a bind of
	// themselves (a checkout under /tmp, say, with a volume at /tmp/k8s-webhook-server/...).
	for _, p := range []string{filepath.Dir(argv[0]), spec.Dir} {
		if st, err := os.Stat(p); p != "" && p != "/" && err == nil && st.IsDir() {
			spec.Mounts = append(spec.Mounts, nsMount{Src: p, Dst: p})
		}
	}
	sort.Slice(spec.Mounts, func(i, j int) bool { return len(spec.Mounts[i].Dst) < len(spec.Mounts[j].Dst) })
	// open every source first: a tmpfs below may hide it
	fds := make([]int, len(spec.Mounts))
	isDir := make([]bool, len(spec.Mounts))
	for i, m := range spec.Mounts {
		fd, err := syscall.Open(m.Src, oPath|syscall.O_CLOEXEC, 0)
		if err != nil {
			fail("open %s: %v", m.Src, err)
		}
		fds[i] = fd
		st, err := os.Stat(m.Src)
		isDir[i] = err == nil && st.IsDir()
	}
	var tmpfs []string
	for _, m := range spec.Mounts {
		if _, err := os.Stat(m.Dst); err == nil {
			continue
		}
		anc := filepath.Dir(m.Dst)
		for {
			if _, err := os.Stat(anc); err == nil {
				break
			}
			anc = filepath.Dir(anc)
		}
		if anc == "/" {
			fail("mountPath %s: no parent directory on this machine to put a tmpfs on", m.Dst)
		}
		tmpfs = append(tmpfs, anc)
	}
	sort.Strings(tmpfs)
	var done []string
	for _, t := range tmpfs {
		covered := false
		for _, d := range done {
			if t == d || strings.HasPrefix(t, d+"/") {
				covered = true
			}
		}
		if covered {
			continue
		}
		if t == "/dev" {
			// the machine's devices stay: a private copy of /dev (the termination file)
			if err := mirrorTmpfs(t); err != nil {
				fail("private /dev: %v", err)
			}
		} else if err := syscall.Mount("tmpfs", t, "tmpfs", 0, "mode=755"); err != nil {
			fail("tmpfs on %s: %v", t, err)
		}
		done = append(done, t)
	}
	for i, m := range spec.Mounts {
		if isDir[i] {
			if err := os.MkdirAll(m.Dst, 0o755); err != nil {
				fail("mkdir %s: %v", m.Dst, err)
			}
		} else {
			_ = os.MkdirAll(filepath.Dir(m.Dst), 0o755)
			if f, err := os.OpenFile(m.Dst, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		src := fmt.Sprintf("/proc/self/fd/%d", fds[i])
		if err := syscall.Mount(src, m.Dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			fail("bind %s on %s: %v", m.Src, m.Dst, err)
		}
		syscall.Close(fds[i])
	}
	if spec.Hostname != "" {
		if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
			fail("hostname: %v", err)
		}
	}
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			fail("chdir %s: %v", spec.Dir, err)
		}
	}
	if err := syscall.Exec(argv[0], argv, os.Environ()); err != nil {
		fail("exec %s: %v", argv[0], err)
	}
}

// mirrorTmpfs puts a tmpfs over dir (in this mount namespace only) holding what dir held:
// each entry bind-mounted from the original (a directory recursively, with what is
// mounted below it, as /dev/pts and /dev/shm), a symbolic link copied. A file can then be
// added to dir without touching the machine's dir. Entries gone meanwhile are skipped.
func mirrorTmpfs(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type entry struct {
		name, link string
		fd         int
		isDir      bool
	}
	var keep []entry
	defer func() {
		for _, e := range keep {
			if e.fd >= 0 {
				syscall.Close(e.fd)
			}
		}
	}()
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			if l, err := os.Readlink(p); err == nil {
				keep = append(keep, entry{name: e.Name(), link: l, fd: -1})
			}
			continue
		}
		if fd, err := syscall.Open(p, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); err == nil {
			keep = append(keep, entry{name: e.Name(), fd: fd, isDir: e.IsDir()})
		}
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID, "mode=755"); err != nil {
		return fmt.Errorf("tmpfs on %s: %v", dir, err)
	}
	for _, e := range keep {
		p := filepath.Join(dir, e.name)
		switch {
		case e.link != "":
			err = os.Symlink(e.link, p)
		case e.isDir:
			err = os.Mkdir(p, 0o755)
		default:
			err = os.WriteFile(p, nil, 0o644)
		}
		if err == nil && e.link == "" {
			err = syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", e.fd), p, "", syscall.MS_BIND|syscall.MS_REC, "")
		}
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
	}
	return nil
}
