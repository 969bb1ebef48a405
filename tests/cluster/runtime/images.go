package main

import (
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// imageRule maps an image to local programs. There are no images here: a container's
// command is looked up on this machine's PATH (the wrappers first), and the rule only
// says which images may run at all and what runs when the pod gives no command.
type imageRule struct {
	prefix     string   // the image's repository name (no registry, no tag) starts with this
	defaultCmd []string // the image's entrypoint+cmd when the container has no command/args
	workDir    string   // the image's WORKDIR (translated through the volume mounts)
	describe   string
	// imageDirs maps directories of the image to host directories (the operator's
	// /usr/local/bin is the repository's build/bin)
	imageDirs map[string]string
	// mountNS: the container gets a mount namespace of its own in which its volumes are
	// bind-mounted at their real mountPaths (hard-coded paths such as the in-cluster
	// service-account directory work); arguments and env are then not translated
	mountNS bool
	// unavailable, when set, says why the image cannot run on this machine
	unavailable string
}

// The image table (documented in tests/cluster/README.md, "Images").
var imageTable = []imageRule{
	{prefix: "redis", defaultCmd: []string{"redis-server"}, workDir: "/data",
		describe: "Debian's redis-server/redis-cli (the tag is ignored: the machine's version runs)"},
	{prefix: "busybox", defaultCmd: []string{"sh"}, workDir: "/",
		describe: "this machine's /bin/sh and tools"},
	{prefix: "rediscluster-operator", defaultCmd: []string{"/usr/local/bin/supervisor"}, workDir: "/",
		describe: "the operator built in this checkout (make: build/bin)", mountNS: true,
		unavailable: "the runtime was started without --operator-bin-dir"},
}

// setOperatorBinDir points the operator's image at the built binaries (checked at each
// start: `make` may run after `up`).
func setOperatorBinDir(dir string) {
	for i := range imageTable {
		if imageTable[i].prefix == "rediscluster-operator" && dir != "" {
			imageTable[i].imageDirs = map[string]string{"/usr/local/bin": dir}
			imageTable[i].unavailable = ""
		}
	}
}

// ruleProblem says why a rule's image cannot run now ("" when it can).
func ruleProblem(r *imageRule) string {
	if r.unavailable != "" {
		return r.unavailable
	}
	if d, ok := r.imageDirs["/usr/local/bin"]; ok {
		if _, err := os.Stat(filepath.Join(d, "supervisor")); err != nil {
			return fmt.Sprintf("the operator is not built (%s/supervisor: run make)", d)
		}
	}
	return ""
}

// repoName is the last path element of an image reference without tag or digest:
// "docker.io/library/redis:7.2@sha256:..." -> "redis".
func repoName(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, "/"); i >= 0 {
		image = image[i+1:]
	}
	if i := strings.Index(image, ":"); i >= 0 {
		image = image[:i]
	}
	return image
}

// lookupImage returns the rule for an image, or an error message as the kubelet's
// ErrImagePull would carry it.
func lookupImage(image string) (*imageRule, error) {
	name := repoName(image)
	var best *imageRule // the longest matching prefix: rediscluster-operator is not redis
	for i := range imageTable {
		r := &imageTable[i]
		if name != "" && strings.HasPrefix(name, r.prefix) && (best == nil || len(r.prefix) > len(best.prefix)) {
			best = r
		}
	}
	if best != nil {
		if why := ruleProblem(best); why != "" {
			return nil, fmt.Errorf("image %q: %s", image, why)
		}
		return best, nil
	}
	var known []string
	for _, r := range imageTable {
		known = append(known, r.prefix+"*")
	}
	return nil, fmt.Errorf("image %q is not in the process runtime's image table (tests/cluster/README.md, \"Images\"); "+
		"it runs only %s", image, strings.Join(known, ", "))
}

// mountMap translates container paths to host paths: the longest mountPath that is a
// prefix (on a path-element boundary) wins.
type mountMap []mountEntry

type mountEntry struct{ ctrPath, hostPath string }

func newMountMap(entries []mountEntry) mountMap {
	m := mountMap(append([]mountEntry(nil), entries...))
	sort.SliceStable(m, func(i, j int) bool { return len(m[i].ctrPath) > len(m[j].ctrPath) })
	return m
}

// translate maps an absolute container path to the host; other strings come back as is.
func (m mountMap) translate(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	for _, e := range m {
		mp := strings.TrimRight(e.ctrPath, "/")
		if mp == "" {
			continue
		}
		if p == mp {
			return e.hostPath
		}
		if strings.HasPrefix(p, mp+"/") {
			return e.hostPath + p[len(mp):]
		}
	}
	return p
}

// translateArg translates an argument that is a path, or an --opt=path.
func (m mountMap) translateArg(a string) string {
	if t := m.translate(a); t != a {
		return t
	}
	if i := strings.Index(a, "="); i > 0 && i+1 < len(a) && a[i+1] == '/' {
		if t := m.translate(a[i+1:]); t != a[i+1:] {
			return a[:i+1] + t
		}
	}
	return a
}

// expandVars replaces $(NAME) by NAME's value as the kubelet does for command, args and
// env values: "$$" is a literal "$", an unknown $(NAME) stays as written.
func expandVars(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// ipAllocator hands out pod IPs from the top of a CIDR downwards (kwok fills the same
// range from the bottom, so the two never meet in practice).
type ipAllocator struct {
	mu    sync.Mutex
	base  *big.Int
	size  int64
	byKey map[string]string
	used  map[string]bool
}

func newIPAllocator(cidr string) (*ipAllocator, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ones, bits := n.Mask.Size()
	if bits != 32 || ones > 30 {
		return nil, fmt.Errorf("pod CIDR %s: need an IPv4 range of at least /30", cidr)
	}
	if !n.IP.IsLoopback() {
		return nil, fmt.Errorf("pod CIDR %s is not loopback: refusing", cidr)
	}
	return &ipAllocator{base: new(big.Int).SetBytes(n.IP.To4()), size: int64(1) << uint(bits-ones),
		byKey: map[string]string{}, used: map[string]bool{}}, nil
}

func (a *ipAllocator) ipAt(off int64) string {
	v := new(big.Int).Add(a.base, big.NewInt(off)).Bytes()
	for len(v) < 4 {
		v = append([]byte{0}, v...)
	}
	return net.IP(v).String()
}

func (a *ipAllocator) contains(ip string) bool {
	p := net.ParseIP(ip).To4()
	if p == nil {
		return false
	}
	off := new(big.Int).Sub(new(big.Int).SetBytes(p), a.base)
	return off.Sign() > 0 && off.Int64() < a.size-1
}

// get returns key's IP: prefer (if free and in range), else the highest free address.
func (a *ipAllocator) get(key, prefer string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byKey[key]; ok {
		return ip, nil
	}
	if prefer != "" && a.contains(prefer) && !a.used[prefer] {
		a.byKey[key], a.used[prefer] = prefer, true
		return prefer, nil
	}
	for off := a.size - 2; off >= 1; off-- {
		ip := a.ipAt(off)
		if !a.used[ip] {
			a.byKey[key], a.used[ip] = ip, true
			return ip, nil
		}
	}
	return "", fmt.Errorf("no free pod IP left")
}

func (a *ipAllocator) release(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byKey[key]; ok {
		delete(a.used, ip)
		delete(a.byKey, key)
	}
}

// lookPathOutside finds a program on PATH, skipping the wrapper directory.
func lookPathOutside(prog, skip string) (string, error) {
	for _, d := range filepath.SplitList(defaultPath) {
		if d == skip {
			continue
		}
		p := filepath.Join(d, prog)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(prog)
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ---- PID files: "<pid> <start time in clock ticks>" so a recycled pid is never hit ----

func procStartTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("bad stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("bad stat")
	}
	return f[19], nil // field 22 of stat
}

func writePidFile(path string, pid int) error {
	st, err := procStartTime(pid)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %s\n", pid, st)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// sweepPidFiles KILLs the process group of every PID file whose process still is the one
// recorded (left over by a runtime that died), then removes the files.
func sweepPidFiles(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			fs := strings.Fields(string(b))
			if len(fs) == 2 {
				pid, _ := strconv.Atoi(fs[0])
				if st, err := procStartTime(pid); err == nil && st == fs[1] && pid > 1 {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
		}
		_ = os.Remove(f)
	}
}

// bindArg rewrites a listen address without a host (":8080", "0.0.0.0:8080", "[::]:8080")
// in a --*bind-address=... argument to the pod IP: the pod's ports are its own.
func bindArg(a, ip string) string {
	i := strings.Index(a, "bind-address=")
	if !strings.HasPrefix(a, "--") || i < 0 {
		return a
	}
	v := a[i+len("bind-address="):]
	for _, any := range []string{":", "0.0.0.0:", "[::]:", "*:"} {
		if strings.HasPrefix(v, any) && v != any {
			if _, err := strconv.Atoi(v[len(any):]); err == nil {
				return a[:i+len("bind-address=")] + ip + ":" + v[len(any):]
			}
		}
	}
	return a
}
