package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	backoffStart = 10 * time.Second
	backoffMax   = 5 * time.Minute
	backoffReset = 10 * time.Minute
)

// container is one container of a pod: at most one process at a time, its logs, its
// probe results and its restart bookkeeping. Fields after mu are guarded by it.
type container struct {
	w    *podWorker
	spec v1.Container

	mu           sync.Mutex
	pid          int
	running      bool
	done         chan struct{}
	startedAt    time.Time
	restartCount int32
	everRan      bool
	exitHandled  bool
	last, prev   *v1.ContainerStateTerminated
	waitReason   string
	waitMsg      string
	backoff      time.Duration
	nextStart    time.Time
	ready        bool
	started      bool
	liveFailed   string // why liveness/startup failed: the worker kills the process
	stopping     bool
	probeCancel  context.CancelFunc
	env          []string
	dir          string
}

func (c *container) logPath() string { return filepath.Join(c.w.dir, "logs", c.spec.Name+".log") }
func (c *container) prevLogPath() string {
	return filepath.Join(c.w.dir, "logs", c.spec.Name+".previous.log")
}
func (c *container) pidPath() string {
	return filepath.Join(c.w.rt.pidsDir(), fmt.Sprintf("%s_%s_%s.pid", c.w.ns, c.w.name, c.spec.Name))
}

// mt is a metav1.Time at the API's precision, so statuses compare equal after a round trip.
func mt(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

// start runs argv as the container's process in its own process group, stdout/stderr to
// the log file in the CRI format (what `kubectl logs` reads through kwok).
func (c *container) start(argv, env []string, dir string, ns *nsSpec) error {
	if c.everRan {
		_ = os.Rename(c.logPath(), c.prevLogPath())
	}
	if err := os.MkdirAll(filepath.Dir(c.logPath()), 0o755); err != nil {
		return err
	}
	if err := c.newTermFile(); err != nil {
		return err
	}
	lf, err := os.OpenFile(c.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		lf.Close()
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		lf.Close()
		outR.Close()
		outW.Close()
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if ns != nil {
		self, err := os.Executable()
		spec, _ := json.Marshal(ns)
		if err != nil {
			self = "/proc/self/exe"
		}
		cmd = exec.Command(self, append([]string{"__mount-exec", string(spec), "--"}, argv...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Unshareflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS}
	}
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		lf.Close()
		return err
	}
	pid := cmd.Process.Pid
	if err := writePidFile(c.pidPath(), pid); err != nil {
		c.w.logf("pid file: %v", err)
	}
	var lmu sync.Mutex
	var pumps sync.WaitGroup
	pumps.Add(2)
	go pumpLog(outR, "stdout", lf, &lmu, &pumps)
	go pumpLog(errR, "stderr", lf, &lmu, &pumps)
	logsDone := make(chan struct{})
	go func() {
		pumps.Wait()
		lf.Close()
		close(logsDone)
	}()

	done := make(chan struct{})
	pctx, cancel := context.WithCancel(c.w.rt.ctx)
	c.mu.Lock()
	if c.everRan {
		c.restartCount++
	}
	c.pid, c.running, c.done, c.startedAt = pid, true, done, time.Now()
	c.everRan, c.exitHandled = true, false
	c.waitReason, c.waitMsg = "", ""
	c.ready, c.started, c.liveFailed, c.stopping = false, c.spec.StartupProbe == nil, "", false
	c.probeCancel = cancel
	c.env, c.dir = env, dir
	startedAt := c.startedAt
	c.mu.Unlock()
	c.w.logf("container %s started: pid %d: %v", c.spec.Name, pid, argv)

	go func() {
		_ = cmd.Wait()
		st := cmd.ProcessState
		code := st.ExitCode()
		var sig int32
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = int32(ws.Signal())
			code = 128 + int(sig)
		}
		// the container ends with its main process: nothing of its group survives it
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = os.Remove(c.pidPath())
		cancel()
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		msg := c.terminationMessage(code, logsDone)
		c.mu.Lock()
		t := &v1.ContainerStateTerminated{ExitCode: int32(code), Signal: sig, Reason: reason, Message: msg,
			StartedAt: mt(startedAt), FinishedAt: mt(time.Now()), ContainerID: c.containerID()}
		c.prev, c.last = c.last, t
		c.running, c.ready = false, false
		c.mu.Unlock()
		close(done)
		c.w.logf("container %s exited: code %d", c.spec.Name, code)
		c.w.poke()
	}()
	c.w.startProbes(pctx, c)
	return nil
}

// containerID is stable for one run of the container (mu held or not: reads only ints).
func (c *container) containerID() string {
	return fmt.Sprintf("rdc-runtime://%s-%s-%d", c.w.uid, c.spec.Name, c.restartCount)
}

// pumpLog copies one stream into the log file as CRI log lines:
// "<RFC3339Nano> <stream> <F|P> <text>\n" (P: a partial line continued by the next).
func pumpLog(r *os.File, stream string, lf *os.File, lmu *sync.Mutex, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.Close()
	br := bufio.NewReaderSize(r, 16*1024)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			tag := "F"
			body := line
			if line[len(line)-1] == '\n' {
				body = line[:len(line)-1]
			} else if err == bufio.ErrBufferFull {
				tag = "P"
			}
			lmu.Lock()
			fmt.Fprintf(lf, "%s %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, tag, body)
			lmu.Unlock()
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return
		}
	}
}

// stop ends the running process as the kubelet does: the preStop hook (if given) within
// the grace period, SIGTERM to the process group, SIGKILL when the grace period is over.
// It returns when the process has exited (or 5 s after SIGKILL).
func (c *container) stop(grace time.Duration, preStop func(deadline time.Time)) {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return
	}
	c.stopping = true
	c.ready = false
	pid, done := c.pid, c.done
	c.mu.Unlock()
	deadline := time.Now().Add(grace)
	if preStop != nil {
		preStop(deadline)
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-done:
		return
	case <-time.After(time.Until(deadline)):
	}
	c.w.logf("container %s: grace period of %s over: SIGKILL", c.spec.Name, grace)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// kill SIGKILLs the process group at once (a lost node).
func (c *container) kill() {
	c.mu.Lock()
	pid, running, done := c.pid, c.running, c.done
	c.mu.Unlock()
	if running {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
}

// status is the container's entry in pod.status.containerStatuses.
func (c *container) status() v1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := v1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, RestartCount: c.restartCount}
	started := false
	switch {
	case c.running:
		cs.ImageID = "rdc-runtime://" + repoName(c.spec.Image)
		cs.ContainerID = c.containerID()
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: mt(c.startedAt)}
		started = c.started
		if c.spec.ReadinessProbe == nil {
			cs.Ready = c.started && !c.stopping
		} else {
			cs.Ready = c.ready && !c.stopping
		}
		if c.last != nil {
			cs.LastTerminationState.Terminated = c.last
		}
	case c.waitReason != "":
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: c.waitReason, Message: c.waitMsg}
		if c.last != nil {
			cs.LastTerminationState.Terminated = c.last
		}
	case c.last != nil:
		cs.ImageID = "rdc-runtime://" + repoName(c.spec.Image)
		cs.ContainerID = c.last.ContainerID
		cs.State.Terminated = c.last
		if c.prev != nil {
			cs.LastTerminationState.Terminated = c.prev
		}
	default:
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	cs.Started = &started
	return cs
}

// handleExit (mu held) starts the crash-loop back-off once per exit: 10 s doubling to
// 5 min, back to 10 s after a run of 10 min or more.
func (c *container) handleExit(now time.Time) {
	if !c.everRan || c.exitHandled {
		return
	}
	c.exitHandled = true
	if c.last != nil && c.last.FinishedAt.Sub(c.last.StartedAt.Time) >= backoffReset {
		c.backoff = 0
	}
	if c.backoff == 0 {
		c.backoff = backoffStart
	} else if c.backoff *= 2; c.backoff > backoffMax {
		c.backoff = backoffMax
	}
	c.nextStart = now.Add(c.backoff)
}

func (c *container) setWaiting(reason, msg string) {
	c.mu.Lock()
	c.waitReason, c.waitMsg = reason, msg
	c.mu.Unlock()
}
