package main

// The control channel of tfjobgen's runtime (generator/tfjobgen/runtime/control.py), line for line:
// the same messages, timeouts and rules, so that a chief of either side serves tasks of either side.
// control_interop_test.py in tests/runtime holds the two to the same transcript.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	version        = "tfjobgen/1"
	heartbeat      = 2 * time.Second  // between WAITs from the chief
	silenceLimit   = 10 * time.Second // without a line, a connection is dead
	retryInterval  = 1 * time.Second  // between connection attempts to an absent chief
	poll           = 250 * time.Millisecond
	maxLine        = 1024
	finishLinger   = 60 * time.Second // the chief keeps answering DONE to tasks that have not said BYE (below)
	abortLinger    = 20 * time.Second // the chief keeps saying ABORT (ending.ABORT_LINGER)
	connectTimeout = 5 * time.Second
)

// finishLinger: a task whose pod is being replaced when training ends (the Job controller waits 10 s,
// then 20 s, before a new pod) hears DONE once it is up. The runtime's chief lingers 10 s (tf2.LINGER),
// since its tasks also find its word in the model directory; a program of your own leaves no such word,
// so DONE is all they get. The wait costs nothing when every task answers at once.

var errTimeout = errors.New("no line in time")

// lines reads text lines off a connection with a deadline per read, as control.py's _Lines.
type lines struct {
	conn   net.Conn
	buffer []byte
}

func newLines(conn net.Conn) *lines {
	return &lines{conn: conn}
}

// read the next line; errTimeout when none came within timeout; any other error: the peer is gone.
func (l *lines) read(timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	chunk := make([]byte, 4096)
	for bytes.IndexByte(l.buffer, '\n') < 0 {
		if len(l.buffer) > maxLine {
			return "", errors.New("line too long")
		}
		l.conn.SetReadDeadline(deadline)
		n, err := l.conn.Read(chunk)
		l.buffer = append(l.buffer, chunk[:n]...)
		if err != nil && bytes.IndexByte(l.buffer, '\n') < 0 {
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				return "", errTimeout
			}
			return "", err
		}
	}
	i := bytes.IndexByte(l.buffer, '\n')
	line := string(l.buffer[:i])
	l.buffer = l.buffer[i+1:]
	return strings.TrimSpace(strings.ToValidUTF8(line, "\uFFFD")), nil
}

func (l *lines) write(text string) error {
	l.conn.SetWriteDeadline(time.Now().Add(silenceLimit))
	_, err := l.conn.Write([]byte(text + "\n"))
	return err
}

// oneLine squeezes whitespace and keeps a reason well within a line, as control.py does.
func oneLine(text string) string {
	joined := strings.Join(strings.Fields(text), " ")
	if len(joined) > maxLine/2 {
		joined = joined[:maxLine/2]
	}
	return joined
}

// ---- the chief's side --------------------------------------------------------------------------

type taskState struct {
	connected, finished, acknowledged bool
	connection                        int
}

type chiefServer struct {
	job      string
	mu       sync.Mutex
	changed  *sync.Cond
	tasks    map[string]*taskState
	done     bool
	aborting *string
	count    int
	listener net.Listener
	onFailed func(name string, code int, reason string)
	say      func(string)
}

func newChiefServer(job string, tasks []string, onFailed func(string, int, string), say func(string)) *chiefServer {
	s := &chiefServer{job: job, tasks: map[string]*taskState{}, onFailed: onFailed, say: say}
	s.changed = sync.NewCond(&s.mu)
	for _, name := range tasks {
		s.tasks[name] = &taskState{}
	}
	return s
}

// listen on the port of address; an IP literal is bound as is, a DNS name (the chief's own pod's)
// means every interface of the pod.
func (s *chiefServer) listen(address string) error {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("'%s' is not a host:port address", address)
	}
	if net.ParseIP(host) == nil {
		host = ""
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("cannot listen on control port %s: %v", address, err)
	}
	s.listener = listener
	go s.accept()
	return nil
}

func (s *chiefServer) accept() {
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		go s.serve(conn)
	}
}

func (s *chiefServer) news() string {
	if s.aborting != nil {
		return "ABORT " + s.job + " " + *s.aborting
	}
	if s.done {
		return "DONE " + s.job
	}
	return "WAIT"
}

func (s *chiefServer) serve(conn net.Conn) {
	defer conn.Close()
	link := newLines(conn)
	hello, err := link.read(silenceLimit)
	if err != nil && err != errTimeout {
		return
	}
	parts := strings.Fields(hello)
	if len(parts) != 4 || parts[0] != "HELLO" || parts[1] != version {
		link.write(fmt.Sprintf("REFUSE expected 'HELLO %s <job> <role>:<index>', got '%s'", version, hello))
		return
	}
	job, name := parts[2], parts[3]
	s.mu.Lock()
	state, known := s.tasks[name]
	if job != s.job || !known {
		s.mu.Unlock()
		link.write(fmt.Sprintf("REFUSE this is the chief of job %s, which has no task %s of job %s", s.job, name, job))
		return
	}
	s.count++
	connection := s.count
	state.connected, state.connection = true, connection
	s.changed.Broadcast()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if state.connection == connection {
			state.connected = false
			s.say(name + " disconnected from the control channel")
		}
		s.changed.Broadcast()
		s.mu.Unlock()
	}()
	if link.write("WELCOME "+s.job) != nil {
		return
	}
	said, lastSent := "", time.Time{}
	for {
		s.mu.Lock()
		now := s.news()
		s.mu.Unlock()
		if now != said || time.Since(lastSent) >= heartbeat {
			if link.write(now) != nil {
				return
			}
			said, lastSent = now, time.Now()
		}
		message, err := link.read(poll)
		if err == errTimeout {
			continue
		}
		if err != nil {
			return
		}
		switch {
		case strings.HasPrefix(message, "FAILED "):
			s.taskFailed(name, message)
		case message == "FINISHED":
			s.mu.Lock()
			state.finished = true
			s.changed.Broadcast()
			s.mu.Unlock()
		case message == "BYE":
			s.mu.Lock()
			state.acknowledged = true
			s.changed.Broadcast()
			s.mu.Unlock()
			return
		}
	}
}

func (s *chiefServer) taskFailed(name, message string) {
	fields := strings.SplitN(message, " ", 3)
	code, reason := 1, ""
	if len(fields) > 1 {
		if n, err := strconv.Atoi(fields[1]); err == nil && n >= 0 {
			code = n
		}
	}
	if len(fields) > 2 {
		reason = fields[2]
	}
	s.mu.Lock()
	over := s.done || s.aborting != nil
	s.mu.Unlock()
	if !over {
		go s.onFailed(name, code, reason)
	}
}

// waitFor, called with s.mu held, waits until pending() lists nothing or linger passed; what it lists then.
func (s *chiefServer) waitFor(linger time.Duration, pending func() []string) []string {
	deadline := time.Now().Add(linger)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // sync.Cond has no timed wait: wake the waiter now and then
		ticker := time.NewTicker(poll)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				s.mu.Lock()
				s.changed.Broadcast()
				s.mu.Unlock()
			}
		}
	}()
	for {
		waiting := pending()
		if len(waiting) == 0 || !time.Now().Before(deadline) {
			sort.Strings(waiting)
			return waiting
		}
		s.changed.Wait()
	}
}

// finish tells every task that training is over; waits up to linger for each to acknowledge (a task
// that said FINISHED and left counts as done). The tasks that never did.
func (s *chiefServer) finish(linger time.Duration) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	s.changed.Broadcast()
	return s.waitFor(linger, func() []string {
		var waiting []string
		for name, t := range s.tasks {
			if !t.acknowledged && !(t.finished && !t.connected) {
				waiting = append(waiting, name)
			}
		}
		return waiting
	})
}

// abort tells every task to stop, now and for up to linger to tasks that connect meanwhile; waits for
// a BYE from every task connected now and from every task never seen (it may still be starting).
func (s *chiefServer) abort(reason string, linger time.Duration) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	why := oneLine(reason)
	s.aborting = &why
	s.changed.Broadcast()
	return s.waitFor(linger, func() []string {
		var waiting []string
		for name, t := range s.tasks {
			if !t.acknowledged && (t.connected || t.connection == 0) {
				waiting = append(waiting, name)
			}
		}
		return waiting
	})
}

// waitUntilFinished (tf1): until each of names said FINISHED or left after connecting; those still training.
func (s *chiefServer) waitUntilFinished(names []string, timeout time.Duration) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitFor(timeout, func() []string {
		var busy []string
		for _, name := range names {
			if t := s.tasks[name]; !t.finished && t.connected {
				busy = append(busy, name)
			}
		}
		return busy
	})
}

// ---- every other task's side ------------------------------------------------------------------

// How a task's link ends.
type linkEnd struct {
	word   string // DONE, ABORT, REFUSE, GONE
	reason string
}

type chiefLink struct {
	address, job, name string
	absenceLimit       time.Duration
	say                func(string)
	mu                 sync.Mutex
	finished           bool // the program ended well: tell the chief FINISHED
	toldFinished       chan struct{}
}

// run blocks until the link ends: DONE, ABORT (with the chief's reason), REFUSE or GONE.
func (c *chiefLink) run() linkEnd {
	lastContact := time.Now()
	reported := false
	for {
		end, contact, err := c.session()
		if end != nil {
			return *end
		}
		if contact {
			lastContact, reported = time.Now(), false
		} else if err != nil && !reported {
			c.say(fmt.Sprintf("chief at %s not reachable (%v); retrying for up to %.0f s", c.address, err,
				c.absenceLimit.Seconds()))
			reported = true
		}
		if absent := time.Since(lastContact); absent > c.absenceLimit {
			return linkEnd{"GONE", fmt.Sprintf("the chief at %s has been unreachable for %.0f s (limit %.0f s); "+
				"giving up", c.address, absent.Seconds(), c.absenceLimit.Seconds())}
		}
		time.Sleep(retryInterval)
	}
}

// session is one connection: its end when the chief said one, else whether contact was made.
func (c *chiefLink) session() (*linkEnd, bool, error) {
	conn, err := net.DialTimeout("tcp", c.address, connectTimeout)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close()
	link := newLines(conn)
	if err := link.write(fmt.Sprintf("HELLO %s %s %s", version, c.job, c.name)); err != nil {
		return nil, true, nil
	}
	for {
		c.mu.Lock()
		tell := c.finished && c.toldFinished != nil
		c.mu.Unlock()
		if tell {
			if link.write("FINISHED") != nil {
				return nil, true, nil
			}
			c.mu.Lock()
			close(c.toldFinished)
			c.toldFinished = nil
			c.mu.Unlock()
		}
		message, err := link.read(silenceLimit)
		if err != nil {
			return nil, true, nil // silent for too long, or closed: the chief's pod is gone or restarts
		}
		word, rest, _ := strings.Cut(message, " ")
		if word == "REFUSE" {
			return &linkEnd{"REFUSE", fmt.Sprintf("the chief at %s refused %s: %s", c.address, c.name, rest)}, true, nil
		}
		job, reason, _ := strings.Cut(rest, " ")
		if (word == "DONE" || word == "ABORT") && job == c.job {
			link.write("BYE")
			if word == "ABORT" && reason == "" {
				reason = "the chief stopped the training"
			}
			return &linkEnd{word, reason}, true, nil
		}
	}
}

// tellFinished asks the link to say FINISHED; a channel closed once it went out.
func (c *chiefLink) tellFinished() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished = true
	c.toldFinished = make(chan struct{})
	return c.toldFinished
}

// tellChiefFailed says FAILED on a short connection of its own; true when the chief answered ABORT.
func tellChiefFailed(address, job, name string, code int, reason string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	conn, err := net.DialTimeout("tcp", address, timeout)
	if err != nil {
		return false
	}
	defer conn.Close()
	link := newLines(conn)
	if link.write(fmt.Sprintf("HELLO %s %s %s", version, job, name)) != nil {
		return false
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		message, err := link.read(left)
		if err != nil {
			return false
		}
		switch word, _, _ := strings.Cut(message, " "); word {
		case "WELCOME":
			if link.write(fmt.Sprintf("FAILED %d %s", code, oneLine(reason))) != nil {
				return false
			}
		case "ABORT":
			link.write("BYE")
			return true
		case "DONE", "REFUSE":
			return false
		}
	}
}

func sayTo(prefix string) func(string) {
	return func(message string) { fmt.Fprintf(os.Stderr, "%s: %s\n", prefix, message) }
}
