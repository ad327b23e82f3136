// entry: the process a team's own program (a TrainingJob's spec.command) runs under, so that the job
// ends as a job of tfjobgen's runtime does (docs/runtime.md, "A program of your own").
//
//	entry copy <path>             the init container: copy this static binary to <path> (an emptyDir)
//	entry -- <program> [arg]...   the task: run the program as its child and take part in the control
//	                              channel (control.go, the protocol of runtime/control.py)
//
// The chief (TF_CONFIG's chief, or worker 0 when there is none) serves the control channel at
// TFJOBGEN_CONTROL_ADDRESS. When its program exits 0 it tells every task DONE and exits 0; when the
// program fails for good (a permanent exit code, or any failure on its last attempt) it tells every
// task ABORT and exits with the program's code. Every other task keeps a link to the chief: on DONE
// it stops its program (SIGTERM, then SIGKILL after stopGrace) and exits 0; on ABORT it stops it and
// exits 4; when the chief stays away longer than TFJOBGEN_CHIEF_ABSENCE_SECONDS it stops it and exits
// 3. A program that exits on its own is followed: 0 says FINISHED, a failure for good says FAILED
// (the chief then stops everyone), and the entry exits with the program's code.
//
// SIGTERM and SIGINT are passed on to the program; the entry, PID 1 of its container, also collects
// the exit of every orphan the program leaves behind.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Exit codes, as the runtime's (shared/contract.py).
const (
	exitOK        = 0
	exitFailed    = 1
	exitSetup     = 2
	exitChiefGone = 3
	exitAborted   = 4
	signalBase    = 128
)

const stopGrace = 10 * time.Second // SIGTERM to SIGKILL when the entry stops its program

type task struct {
	job, api, role string
	index          int
	cluster        map[string][]string
	control        string
	evaluator      bool
	retries        int // -1: unknown
	failures       int // -1: unknown
	permanent      map[int]bool
	absence        time.Duration
}

func (t task) name() string { return fmt.Sprintf("%s:%d", t.role, t.index) }

func (t task) isChief() bool {
	if t.role == "chief" {
		return true
	}
	_, hasChief := t.cluster["chief"]
	return t.role == "worker" && t.index == 0 && !hasChief
}

func (t task) lastAttempt() bool {
	return t.retries >= 0 && t.failures >= 0 && t.failures >= t.retries
}

func (t task) forGood(code int) bool {
	return t.permanent[code] || (code != exitOK && t.lastAttempt())
}

// clients: every task that talks to the chief, as runtime/settings.py's control_clients.
func (t task) clients() []string {
	var names []string
	for _, role := range []string{"chief", "ps", "worker"} {
		for i := range t.cluster[role] {
			if name := fmt.Sprintf("%s:%d", role, i); name != t.name() {
				names = append(names, name)
			}
		}
	}
	if t.evaluator && t.name() != "evaluator:0" {
		names = append(names, "evaluator:0")
	}
	return names
}

type setupError string

func (e setupError) Error() string { return string(e) }

func taskFromEnv(env func(string) string) (task, error) {
	var config struct {
		Cluster map[string][]string `json:"cluster"`
		Task    struct {
			Type  string `json:"type"`
			Index *int   `json:"index"`
		} `json:"task"`
	}
	if err := json.Unmarshal([]byte(env("TF_CONFIG")), &config); err != nil {
		return task{}, setupError(fmt.Sprintf("TF_CONFIG is not valid JSON (%v)", err))
	}
	if config.Cluster == nil || config.Task.Type == "" || config.Task.Index == nil {
		return task{}, setupError("TF_CONFIG needs a 'cluster' mapping and a 'task' with type and index")
	}
	t := task{job: env("TFJOBGEN_JOB"), api: env("TFJOBGEN_API"), role: config.Task.Type, index: *config.Task.Index,
		cluster: config.Cluster, control: env("TFJOBGEN_CONTROL_ADDRESS"), evaluator: env("TFJOBGEN_EVALUATOR") == "1",
		permanent: map[int]bool{exitSetup: true, exitChiefGone: true, exitAborted: true}}
	for _, name := range []string{"TFJOBGEN_JOB", "TFJOBGEN_CONTROL_ADDRESS"} {
		if strings.TrimSpace(env(name)) == "" {
			return task{}, setupError(name + " is not set: the generator writes it into every pod")
		}
	}
	if hosts, listed := t.cluster[t.role]; t.role != "evaluator" && (!listed || t.index < 0 || t.index >= len(hosts)) {
		return task{}, setupError(fmt.Sprintf("TF_CONFIG task %s is not in the cluster", t.name()))
	}
	number := func(name string, fallback int) (int, error) {
		text := strings.TrimSpace(env(name))
		if text == "" {
			return fallback, nil
		}
		n, err := strconv.Atoi(text)
		if err != nil || n < 0 {
			return 0, setupError(fmt.Sprintf("%s=%q is not a whole number", name, text))
		}
		return n, nil
	}
	var err error
	if t.retries, err = number("TFJOBGEN_TASK_RETRIES", -1); err != nil {
		return task{}, err
	}
	if t.failures, err = number("TFJOBGEN_TASK_FAILURES", -1); err != nil {
		return task{}, err
	}
	absence, err := number("TFJOBGEN_CHIEF_ABSENCE_SECONDS", 600)
	if err != nil {
		return task{}, err
	}
	t.absence = time.Duration(absence) * time.Second
	for _, word := range strings.FieldsFunc(env("TFJOBGEN_PERMANENT_EXIT_CODES"), func(r rune) bool { return r == ',' }) {
		code, err := strconv.Atoi(strings.TrimSpace(word))
		if err != nil {
			return task{}, setupError(fmt.Sprintf("TFJOBGEN_PERMANENT_EXIT_CODES: %q is not an exit code", word))
		}
		t.permanent[code] = true
	}
	return t, nil
}

// ---- the program, as a child -------------------------------------------------------------------

// child runs the program and reports its exit code (128 + n when signal n ended it) on exited.
type child struct {
	pid    int
	exited chan int
}

func startChild(argv []string, signals <-chan os.Signal) (*child, error) {
	process, err := os.StartProcess(lookPath(argv[0]), argv, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Env: os.Environ()})
	if err != nil {
		return nil, err
	}
	c := &child{pid: process.Pid, exited: make(chan int, 1)}
	go c.watch(signals)
	return c, nil
}

// watch passes SIGTERM and SIGINT on, and on SIGCHLD collects every ended process: the program's
// exit goes to exited, an orphan's is only collected (the entry is PID 1 of its container).
func (c *child) watch(signals <-chan os.Signal) {
	for received := range signals {
		if received != syscall.SIGCHLD {
			syscall.Kill(c.pid, received.(syscall.Signal))
			continue
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			if pid == c.pid {
				code := status.ExitStatus()
				if status.Signaled() {
					code = signalBase + int(status.Signal())
				}
				c.exited <- code
			}
		}
	}
}

// stop ends the program: SIGTERM, then SIGKILL after the grace period; its exit code.
func (c *child) stop(say func(string)) int {
	syscall.Kill(c.pid, syscall.SIGTERM)
	select {
	case code := <-c.exited:
		return code
	case <-time.After(stopGrace):
		say(fmt.Sprintf("the program did not end within %.0f s of SIGTERM: SIGKILL", stopGrace.Seconds()))
		syscall.Kill(c.pid, syscall.SIGKILL)
		return <-c.exited
	}
}

// lookPath finds a program name without a slash on PATH, as execvp does.
func lookPath(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		if dir == "" {
			dir = "."
		}
		path := dir + "/" + name
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return path
		}
	}
	return name
}

// ---- the roles ------------------------------------------------------------------------------

func runChief(t task, program *child, say func(string)) int {
	failed := make(chan string, 1)
	server := newChiefServer(t.job, t.clients(), func(name string, code int, reason string) {
		select {
		case failed <- strings.TrimSpace(fmt.Sprintf("%s failed for good %s", name, reason)):
		default:
		}
	}, say)
	if err := server.listen(t.control); err != nil {
		say(err.Error())
		program.stop(say)
		return exitSetup
	}
	say(fmt.Sprintf("control server listening at %s for %d task(s)", t.control, len(t.clients())))
	select {
	case code := <-program.exited:
		if code == exitOK {
			if t.api == "tf1" { // between-graph: the other workers train on; DONE once each has finished
				var workers []string
				for _, name := range t.clients() {
					if strings.HasPrefix(name, "worker:") {
						workers = append(workers, name)
					}
				}
				if busy := server.waitUntilFinished(workers, t.absence/2); len(busy) > 0 {
					say(fmt.Sprintf("%s still training after %.0f s; ending the job anyway", strings.Join(busy, ", "),
						(t.absence / 2).Seconds()))
				}
			}
			still := server.finish(finishLinger)
			say("the program succeeded: told every task DONE" + unanswered(still))
			return exitOK
		}
		if t.forGood(code) {
			still := server.abort(fmt.Sprintf("%s failed for good (exit %d)", t.name(), code), abortLinger)
			say(fmt.Sprintf("the program failed for good (exit %d): told every task to stop%s", code, unanswered(still)))
		} else {
			say(fmt.Sprintf("the program failed (exit %d); a new pod may do better", code))
		}
		return code
	case why := <-failed:
		say(why + "; stopping every task")
		server.abort(why, abortLinger)
		program.stop(say)
		return exitAborted
	}
}

func unanswered(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "; " + strings.Join(names, ", ") + " did not answer"
}

func runTask(t task, program *child, say func(string)) int {
	link := &chiefLink{address: t.control, job: t.job, name: t.name(), absenceLimit: t.absence, say: say}
	ended := make(chan linkEnd, 1)
	go func() { ended <- link.run() }()
	select {
	case end := <-ended:
		code := map[string]int{"DONE": exitOK, "ABORT": exitAborted, "REFUSE": exitSetup, "GONE": exitChiefGone}[end.word]
		switch end.word {
		case "DONE":
			say("the chief says training is over: stopping the program")
		case "ABORT":
			say("stopped by the chief: " + end.reason)
		default:
			say(end.reason)
		}
		program.stop(say)
		return code
	case code := <-program.exited:
		if code == exitOK {
			select { // the chief hears FINISHED within a heartbeat while connected
			case <-link.tellFinished():
			case <-time.After(heartbeat + time.Second):
			}
			say("the program ended by itself (exit 0)")
			return exitOK
		}
		if t.forGood(code) && tellChiefFailed(t.control, t.job, t.name(), code, fmt.Sprintf("(exit %d)", code), 5*time.Second) {
			say(fmt.Sprintf("the program failed for good (exit %d): told the chief, which stops every task", code))
		} else {
			say(fmt.Sprintf("the program failed (exit %d)", code))
		}
		return code
	}
}

func copySelf(target string) error {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer self.Close()
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, self); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

const usage = "usage: entry -- <program> [arg]... | entry copy <path>"

func main() {
	args := os.Args[1:]
	if len(args) == 2 && args[0] == "copy" {
		if err := copySelf(args[1]); err != nil {
			fmt.Fprintf(os.Stderr, "tfjobgen-entry: cannot copy itself to %s: %v\n", args[1], err)
			os.Exit(exitSetup)
		}
		return
	}
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(exitSetup)
	}
	// Before the child exists, so that no SIGCHLD or SIGTERM goes unseen.
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	t, err := taskFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tfjobgen-entry: %v\n", err)
		os.Exit(exitSetup)
	}
	say := sayTo("tfjobgen-entry " + t.name())
	program, err := startChild(args[1:], signals)
	if err != nil {
		say(fmt.Sprintf("cannot start %s: %v", args[1], err))
		os.Exit(127) // a shell's code for a program it cannot find
	}
	if t.isChief() {
		os.Exit(runChief(t, program, say))
	}
	os.Exit(runTask(t, program, say))
}
