package main

import (
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	cri := "2026-12-06T17:00:00Z stdout F starting\n" +
		"2026-12-06T17:00:01Z stderr P rdc-backup restore: \n" +
		"2026-12-06T17:00:01Z stderr F GetObject b/k: SHA-256 mismatch\n"
	if got, want := logTail(cri, 80, 2048), "starting\nrdc-backup restore: GetObject b/k: SHA-256 mismatch"; got != want {
		t.Fatalf("logTail = %q, want %q", got, want)
	}
	if got := logTail(cri, 1, 2048); got != "rdc-backup restore: GetObject b/k: SHA-256 mismatch" {
		t.Fatalf("one line: %q", got)
	}
	if got := logTail(cri, 80, 8); got != "mismatch" {
		t.Fatalf("8 bytes: %q", got)
	}
	long := strings.Repeat("2026-12-06T17:00:00Z stdout F x\n", 200)
	if got := logTail(long, 80, 2048); strings.Count(got, "\n") != 79 {
		t.Fatalf("80 lines: %d newlines", strings.Count(got, "\n"))
	}
}
