package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestMain lets the test binary stand in for rdc-pod-runtime's __mount-exec helper.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "__mount-exec" {
		mountExecMain(os.Args[2:])
		return
	}
	os.Exit(m.Run())
}

func testContainer(t *testing.T, policy v1.TerminationMessagePolicy) *container {
	w := &podWorker{dir: t.TempDir()}
	c := &container{w: w, spec: v1.Container{Name: "take", TerminationMessagePath: "/dev/termination-log",
		TerminationMessagePolicy: policy}}
	if err := c.newTermFile(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(c.logPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	log := "2026-12-06T17:00:00Z stderr F rdc-backup take: NoSuchBucket\n"
	if err := os.WriteFile(c.logPath(), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTerminationMessage(t *testing.T) {
	done := make(chan struct{})
	close(done)
	fb := v1.TerminationMessageFallbackToLogsOnError
	c := testContainer(t, fb)
	if st, err := os.Stat(c.termPath()); err != nil || st.Size() != 0 || st.Mode().Perm() != 0o666 {
		t.Fatalf("new file: %v %v", st, err)
	}
	// empty file: nothing on success, the log's tail on failure (fallback), nothing under File
	if got := c.terminationMessage(0, done); got != "" {
		t.Errorf("success, empty file: %q", got)
	}
	if got := c.terminationMessage(1, done); got != "rdc-backup take: NoSuchBucket" {
		t.Errorf("failure, empty file, fallback: %q", got)
	}
	if got := testContainer(t, v1.TerminationMessageReadFile).terminationMessage(1, done); got != "" {
		t.Errorf("failure, empty file, File: %q", got)
	}
	// the file wins, on success and on failure
	line := `{"result":"ok","size":5}` + "\n"
	if err := os.WriteFile(c.termPath(), []byte(line), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{0, 1} {
		if got := c.terminationMessage(code, done); got != line {
			t.Errorf("code %d: %q", code, got)
		}
	}
	// its last 4096 bytes
	big := strings.Repeat("a", 5000) + strings.Repeat("b", 4096)
	if err := os.WriteFile(c.termPath(), []byte(big), 0o666); err != nil {
		t.Fatal(err)
	}
	if got := c.terminationMessage(0, done); got != strings.Repeat("b", 4096) {
		t.Errorf("big file: %d bytes, starts %q", len(got), got[:8])
	}
	// a new run starts empty
	if err := c.newTermFile(); err != nil {
		t.Fatal(err)
	}
	if got := c.terminationMessage(0, done); got != "" {
		t.Errorf("new run: %q", got)
	}
	// no path: no file read
	c.spec.TerminationMessagePath = ""
	_ = os.WriteFile(c.termPath(), []byte("x"), 0o666)
	if got := c.terminationMessage(0, done); got != "" {
		t.Errorf("no path: %q", got)
	}
}

func TestTrimPodMessages(t *testing.T) {
	own := &v1.ContainerStateTerminated{Message: strings.Repeat("m", 4096)}
	st := v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: own}}},
		ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: own},
			LastTerminationState: v1.ContainerState{Terminated: own}}, {}},
	}
	trimPodMessages(&st, 4) // 12 KiB / 4 = 3072 bytes each
	for _, m := range []string{st.InitContainerStatuses[0].State.Terminated.Message,
		st.ContainerStatuses[0].State.Terminated.Message,
		st.ContainerStatuses[0].LastTerminationState.Terminated.Message} {
		if len(m) != 3072 {
			t.Errorf("trimmed to %d bytes", len(m))
		}
	}
	if len(own.Message) != 4096 {
		t.Errorf("the container's own state was changed")
	}
	trimPodMessages(&st, 1)
	if len(st.ContainerStatuses[0].State.Terminated.Message) != 3072 {
		t.Errorf("a short message changed")
	}
}

func TestTermMountProblem(t *testing.T) {
	for p, bad := range map[string]bool{"": false, "/dev/termination-log": false, "/tmp/x/y/msg": false,
		"/termination-log": true, "/no-such-dir-h36/msg": true, "dev/x": true, "/dev/../x": true} {
		if got := termMountProblem(p); (got != "") != bad {
			t.Errorf("%q: %q", p, got)
		}
	}
}

// TestMountExecTerminationLog runs a shell through the mount-exec helper as a container
// with a mount namespace runs: it writes /dev/termination-log, which lands in the pod's
// file, with the machine's devices still there and no file added to the machine's /dev.
func TestMountExecTerminationLog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN) for a mount namespace")
	}
	if _, err := os.Stat("/dev/termination-log"); err == nil {
		t.Skip("this machine has a /dev/termination-log")
	}
	host := filepath.Join(t.TempDir(), "msg")
	if err := os.WriteFile(host, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(nsSpec{Mounts: []nsMount{{Src: host, Dst: "/dev/termination-log"}}, Dir: "/"})
	script := `printf 'ok %s' "$(head -c 4 /dev/urandom | wc -c)" > /dev/termination-log && ` +
		`test -c /dev/null && echo x > /dev/null && test -e /dev/fd/0 && ls /dev/pts >/dev/null`
	cmd := exec.Command(os.Args[0], "__mount-exec", string(spec), "--", "/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mount-exec: %v: %s", err, out)
	}
	if b, _ := os.ReadFile(host); string(b) != "ok 4" {
		t.Errorf("pod's file holds %q", b)
	}
	if _, err := os.Stat("/dev/termination-log"); err == nil {
		_ = os.Remove("/dev/termination-log")
		t.Errorf("a file was created in the machine's /dev")
	}
}
