package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Termination messages, as the kubelet makes them. Each run of a container gets a new,
// empty file in the pod's directory (termination/<container>); the process finds it at
// the container's terminationMessagePath (default /dev/termination-log):
//
//   - in a container with a mount namespace (images with mountNS) it is bind-mounted at
//     that path (mountns.go; under /dev, a private copy of the machine's /dev holds it,
//     so nothing is created in the machine's /dev);
//   - elsewhere a command-line argument or env value that is that path is translated to
//     the file, as volume paths are (a shell's own `> /dev/termination-log` is not).
//
// When the process has exited its last 4096 bytes are state.terminated.message, on
// success and failure. With terminationMessagePolicy FallbackToLogsOnError a failed
// container whose file is empty gets the tail of its log instead: the last 80 lines, at
// most 2048 bytes. The pod's status then holds at most 12 KiB of messages: each cut to
// its first 12 KiB / (number of containers) bytes (the kubelet's status manager).
const (
	termMaxBytes     = 4096
	podTermMaxBytes  = 12 * 1024
	fallbackMaxLines = 80
	fallbackMaxBytes = 2048
)

// termPath is the host file behind the terminationMessagePath of the container name.
func (w *podWorker) termPath(name string) string {
	return filepath.Join(w.dir, "termination", name)
}

func (c *container) termPath() string { return c.w.termPath(c.spec.Name) }

// newTermFile makes the empty file of a new run (mode 0666: a process of any user may
// write it).
func (c *container) newTermFile() error {
	if err := os.MkdirAll(filepath.Dir(c.termPath()), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(c.termPath(), nil, 0o666); err != nil {
		return err
	}
	return os.Chmod(c.termPath(), 0o666)
}

// termMountProblem says why the runtime cannot place the container's termination file at
// p ("" when it can): mountns.go puts a tmpfs over the deepest existing ancestor of a
// missing mountPath, never over "/".
func termMountProblem(p string) string {
	if p == "" {
		return ""
	}
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Sprintf("terminationMessagePath %q: not a clean absolute path", p)
	}
	if _, err := os.Stat(p); err == nil {
		return ""
	}
	anc := path.Dir(p)
	for {
		if _, err := os.Stat(anc); err == nil {
			break
		}
		anc = path.Dir(anc)
	}
	if anc == "/" {
		return fmt.Sprintf("terminationMessagePath %q: the process runtime cannot place it (its parent "+
			"directory is / or missing on this machine)", p)
	}
	return ""
}

// terminationMessage is the message of a run that ended with exit code code: the file's
// last termMaxBytes bytes, else (FallbackToLogsOnError and code != 0) the log's tail,
// read once the log is complete (logsDone, or after 2 s).
func (c *container) terminationMessage(code int, logsDone <-chan struct{}) string {
	if c.spec.TerminationMessagePath != "" {
		msg, err := readTail(c.termPath(), termMaxBytes)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Sprintf("Error on reading termination log %s: %v", c.termPath(), err)
		}
		if msg != "" {
			return msg
		}
	}
	if code == 0 || c.spec.TerminationMessagePolicy != v1.TerminationMessageFallbackToLogsOnError {
		return ""
	}
	return c.fallbackMessage(logsDone)
}

// readTail is at most the last max bytes of the file at p.
func readTail(p string, max int64) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if st.Size() > max {
		if _, err := f.Seek(st.Size()-max, io.SeekStart); err != nil {
			return "", err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	return string(b), err
}

// fallbackMessage is the tail of the container's log (FallbackToLogsOnError).
func (c *container) fallbackMessage(logsDone <-chan struct{}) string {
	select {
	case <-logsDone:
	case <-time.After(2 * time.Second):
	}
	f, err := os.Open(c.logPath())
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 64 * 1024 // the tail of a CRI log holding the last 2048 bytes of output
	cut := false
	if st, err := f.Stat(); err == nil && st.Size() > window {
		_, _ = f.Seek(st.Size()-window, io.SeekStart)
		cut = true
	}
	b, _ := io.ReadAll(io.LimitReader(f, window))
	text := string(b)
	if i := strings.IndexByte(text, '\n'); cut && i >= 0 {
		text = text[i+1:] // the first line, cut by the window
	}
	return logTail(text, fallbackMaxLines, fallbackMaxBytes)
}

// logTail is the output held in CRI log lines ("<time> <stream> <F|P> <text>"): its last
// maxLines lines, at most maxBytes bytes of them.
func logTail(cri string, maxLines, maxBytes int) string {
	var out strings.Builder
	for _, l := range strings.Split(cri, "\n") {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 4 {
			continue
		}
		out.WriteString(f[3])
		if f[2] != "P" {
			out.WriteString("\n")
		}
	}
	text := strings.TrimRight(out.String(), "\n")
	if ls := strings.Split(text, "\n"); len(ls) > maxLines {
		text = strings.Join(ls[len(ls)-maxLines:], "\n")
	}
	if len(text) > maxBytes {
		text = text[len(text)-maxBytes:]
	}
	return text
}

// trimPodMessages cuts every terminated message of st (state and lastState) to its first
// podTermMaxBytes / containers bytes, containers being the pod's containers and init
// containers; the terminated states are copied first (they are the containers' own).
func trimPodMessages(st *v1.PodStatus, containers int) {
	per := podTermMaxBytes
	if containers > 0 {
		per /= containers
	}
	trim := func(t **v1.ContainerStateTerminated) {
		if *t != nil && len((*t).Message) > per {
			cp := **t
			cp.Message = cp.Message[:per]
			*t = &cp
		}
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			trim(&list[i].State.Terminated)
			trim(&list[i].LastTerminationState.Terminated)
		}
	}
}
