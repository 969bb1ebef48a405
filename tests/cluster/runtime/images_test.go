package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookupImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		ok    bool
	}{
		{"redis", true}, {"redis:7.2", true}, {"docker.io/library/redis:7.2-alpine", true},
		{"ghcr.io/x/redis-stack@sha256:abc", true}, {"busybox:1.36", true},
		{"nginx:1.25", false}, {"", false}, {"registry:5000/myredis:1", false},
		{"rediscluster-operator:0.1.0", false}, // not the redis rule: the operator's, unavailable here
	} {
		r, err := lookupImage(tc.image)
		if err == nil && strings.HasPrefix(repoName(tc.image), "rediscluster-operator") {
			t.Errorf("lookupImage(%q): the operator's image ran without --operator-bin-dir", tc.image)
		}
		if (err == nil) != tc.ok {
			t.Errorf("lookupImage(%q) err=%v, want ok=%v", tc.image, err, tc.ok)
		}
		if err == nil && r == nil {
			t.Errorf("lookupImage(%q): nil rule", tc.image)
		}
		if err != nil && !strings.Contains(err.Error(), "image table") && !strings.Contains(err.Error(), "--operator-bin-dir") {
			t.Errorf("lookupImage(%q): message %q does not say why", tc.image, err)
		}
	}
}

func TestMountTranslate(t *testing.T) {
	m := newMountMap([]mountEntry{{"/data", "/h/pv1"}, {"/etc/redis", "/h/cfg"}, {"/etc/redis/tls", "/h/tls"}})
	for in, want := range map[string]string{
		"/data": "/h/pv1", "/data/": "/h/pv1/", "/data/dump.rdb": "/h/pv1/dump.rdb", "/database": "/database",
		"/etc/redis/redis.conf": "/h/cfg/redis.conf", "/etc/redis/tls/ca.crt": "/h/tls/ca.crt",
		"relative/data": "relative/data", "ping": "ping",
	} {
		if got := m.translate(in); got != want {
			t.Errorf("translate(%q) = %q, want %q", in, got, want)
		}
	}
	if got := m.translateArg("--config=/etc/redis/x.conf"); got != "--config=/h/cfg/x.conf" {
		t.Errorf("translateArg(--config=...) = %q", got)
	}
	if got := m.translateArg("a=b"); got != "a=b" {
		t.Errorf("translateArg(a=b) = %q", got)
	}
}

func TestExpandVars(t *testing.T) {
	env := map[string]string{"A": "1", "POD_IP": "127.10.255.254"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for in, want := range map[string]string{
		"$(A)":                 "1",
		"x$(A)y$(POD_IP)":      "x1y127.10.255.254",
		"$(MISSING)":           "$(MISSING)",
		"$$(A)":                "$(A)",
		"$A":                   "$A",
		"cost $":               "cost $",
		"$(unterminated":       "$(unterminated",
		"--bind $(POD_IP) end": "--bind 127.10.255.254 end",
	} {
		if got := expandVars(in, lookup); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIPAllocator(t *testing.T) {
	a, err := newIPAllocator("127.10.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	ip1, _ := a.get("a", "")
	ip2, _ := a.get("b", "")
	if ip1 != "127.10.255.254" || ip2 != "127.10.255.253" {
		t.Fatalf("top-down allocation: got %s %s", ip1, ip2)
	}
	if again, _ := a.get("a", ""); again != ip1 {
		t.Fatalf("same key, new IP: %s", again)
	}
	if p, _ := a.get("c", "127.10.0.7"); p != "127.10.0.7" {
		t.Fatalf("preferred IP not honoured: %s", p)
	}
	if p, _ := a.get("d", "127.10.0.7"); p == "127.10.0.7" {
		t.Fatalf("preferred IP given twice")
	}
	a.release("a")
	if ip, _ := a.get("e", ""); ip != ip1 {
		t.Fatalf("released IP not reused: %s", ip)
	}
	if _, err := newIPAllocator("10.0.0.0/16"); err == nil {
		t.Fatal("a non-loopback range was accepted")
	}
	small, _ := newIPAllocator("127.0.0.0/30")
	small.get("x", "")
	small.get("y", "")
	if _, err := small.get("z", ""); err == nil {
		t.Fatal("a full range still gave an IP")
	}
}

func TestRedisCommand(t *testing.T) {
	d := t.TempDir()
	conf := filepath.Join(d, "redis.conf")
	if err := os.WriteFile(conf, []byte("port 6379\ndir /data\nlogfile \"\"\npidfile /var/run/r.pid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newMountMap([]mountEntry{{"/data", filepath.Join(d, "pv")}})
	copyPath := filepath.Join(d, "copy.conf")
	argv, err := redisCommand([]string{"/usr/bin/redis-server", conf}, m, "127.10.255.254", filepath.Join(d, "rootfs"), copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv, " "); got != "/usr/bin/redis-server "+copyPath+" --bind 127.10.255.254 --daemonize no" {
		t.Errorf("argv = %q", got)
	}
	b, _ := os.ReadFile(copyPath)
	want := "port 6379\ndir " + filepath.Join(d, "pv") + "\nlogfile \"\"\npidfile " + filepath.Join(d, "rootfs/var/run/r.pid") + "\n"
	if string(b) != want {
		t.Errorf("config copy:\n%s\nwant:\n%s", b, want)
	}
	if st, err := os.Stat(filepath.Join(d, "pv")); err != nil || !st.IsDir() {
		t.Error("the dir of the config was not created")
	}
	argv, err = redisCommand([]string{"/usr/bin/redis-server", "--port", "7000", "--dir", "/no-such-rdc-dir"}, m, "127.10.0.9", filepath.Join(d, "rootfs"), copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv[1:], " "); got != "--port 7000 --dir "+filepath.Join(d, "rootfs/no-such-rdc-dir")+" --bind 127.10.0.9 --daemonize no" {
		t.Errorf("argv without config = %q", got)
	}
	// an argument already translated to an existing host directory stays as it is
	argv, _ = redisCommand([]string{"/usr/bin/redis-server", "--dir", filepath.Join(d, "pv")}, m, "127.10.0.9", filepath.Join(d, "rootfs"), copyPath)
	if argv[2] != filepath.Join(d, "pv") {
		t.Errorf("--dir of a mount was moved: %q", argv[2])
	}
	if _, err := redisCommand([]string{"/usr/bin/redis-server", filepath.Join(d, "missing.conf")}, m, "127.10.0.9", d, copyPath); err == nil {
		t.Error("a missing config file was not an error")
	}
}

func TestWriteAtomic(t *testing.T) {
	d := filepath.Join(t.TempDir(), "vol")
	if err := writeAtomic(d, fileSet{"a": {[]byte("1"), 0o644}, "sub/b": {[]byte("2"), 0o600}}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.Readlink(filepath.Join(d, "..data"))
	if b, _ := os.ReadFile(filepath.Join(d, "sub/b")); string(b) != "2" {
		t.Fatalf("sub/b = %q", b)
	}
	if err := writeAtomic(d, fileSet{"a": {[]byte("1"), 0o644}, "sub/b": {[]byte("2"), 0o600}}); err != nil {
		t.Fatal(err)
	}
	if same, _ := os.Readlink(filepath.Join(d, "..data")); same != first {
		t.Fatal("unchanged content was rewritten")
	}
	// a reader holding the directory (a bind mount does) sees the update
	fd, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if err := writeAtomic(d, fileSet{"a": {[]byte("new"), 0o644}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "a")); string(b) != "new" {
		t.Fatalf("a = %q after update", b)
	}
	if _, err := os.Stat(filepath.Join(d, "sub/b")); !os.IsNotExist(err) {
		t.Fatal("a key removed from the source is still there")
	}
	if _, err := os.Stat(filepath.Join(d, first)); !os.IsNotExist(err) {
		t.Fatal("the old version dir was not removed")
	}
	if _, err := writeAtomicBad(d); err == nil {
		t.Fatal("a key with .. was accepted")
	}
}

func writeAtomicBad(d string) (bool, error) {
	return false, writeAtomic(d, fileSet{"../escape": {[]byte("x"), 0o644}})
}

func TestBindArg(t *testing.T) {
	for in, want := range map[string]string{
		"--metrics-bind-address=:8080":           "--metrics-bind-address=127.10.0.5:8080",
		"--health-probe-bind-address=0.0.0.0:81": "--health-probe-bind-address=127.10.0.5:81",
		"--metrics-bind-address=127.0.0.1:8080":  "--metrics-bind-address=127.0.0.1:8080",
		"--metrics-bind-address=0":               "--metrics-bind-address=0",
		"--bind-address=[::]:9443":               "--bind-address=127.10.0.5:9443",
		"bind-address=:1":                        "bind-address=:1",
		"--workers=2":                            "--workers=2",
	} {
		if got := bindArg(in, "127.10.0.5"); got != want {
			t.Errorf("bindArg(%q) = %q, want %q", in, got, want)
		}
	}
}
