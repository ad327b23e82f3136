// pause: the process a pod sandbox runs, holding the pod's namespaces while its containers come
// and go.
//
// It waits for signals and nothing else. SIGINT or SIGTERM (the runtime stopping the sandbox) ends
// it with status 0. SIGCHLD means a child exited: in a pod that shares one process namespace this
// process is PID 1, the parent of every orphan, and it collects their exit statuses so that no
// zombie is left. The other signals that would end a Go program (SIGHUP, SIGQUIT, SIGPIPE,
// SIGUSR1, SIGUSR2, SIGALRM) are ignored: the Go runtime catches them, so the kernel's rule that
// PID 1 of a namespace only receives the signals it handles would not protect it.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: pause (it takes no arguments; it exits 0 on SIGINT or SIGTERM)")
		os.Exit(2)
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	signal.Ignore(syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM)
	collectExited() // children inherited through exec may have ended before the handler was in place
	for received := range signals {
		if received == syscall.SIGCHLD {
			collectExited()
			continue
		}
		os.Exit(0)
	}
}

// collectExited waits for every child that has already ended, without blocking: one SIGCHLD may
// stand for several exits.
func collectExited() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 { // ECHILD: no children; 0: the others still run
			return
		}
	}
}
