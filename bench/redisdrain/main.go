// Command redisdrain reads a Redis stream from its first entry to its last
// with XRANGE over one connection and prints one JSON summary line, so that
// bench/compare.sh can time the drain half of workload S4 against Redis the
// way `spool bench consume` times it against Spool.
//
// It owns only its own connection: it never writes to the server and never
// deletes or trims the stream it reads.
//
// The requests and replies it handles (RESP2):
//
//	request:  *6\r\n $6\r\nXRANGE\r\n $<n>\r\n<key>\r\n $<n>\r\n(<last-id>\r\n
//	          $1\r\n+\r\n $5\r\nCOUNT\r\n $<n>\r\n<count>\r\n
//	reply:    *<entries>\r\n
//	            *2\r\n $<n>\r\n<id>\r\n *<2k>\r\n ($<n>\r\n<field-or-value>\r\n)...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

var (
	errProtocol = errors.New("redisdrain: unexpected reply")
	errServer   = errors.New("redisdrain: server error")
)

type summary struct {
	OK         int64   `json:"ok"`
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "redis address")
	key := flag.String("key", "bench", "stream key")
	count := flag.Int("count", 1000, "entries per XRANGE")
	flag.Parse()
	s, err := drain(*addr, *key, *count)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, _ := json.Marshal(s)
	fmt.Println(string(b))
}

func drain(addr, key string, count int) (summary, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return summary{}, fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 1<<20)
	w := bufio.NewWriter(conn)
	cpu0, start := cpuSeconds(), time.Now()
	var s summary
	var bytes int64
	last := "-"
	for {
		writeCommand(w, "XRANGE", key, last, "+", "COUNT", strconv.Itoa(count))
		if err := w.Flush(); err != nil {
			return s, fmt.Errorf("write: %w", err)
		}
		n, err := readArrayLen(r)
		if err != nil {
			return s, err
		}
		if n <= 0 {
			break
		}
		for i := 0; i < n; i++ {
			id, vb, err := readEntry(r)
			if err != nil {
				return s, err
			}
			last = "(" + id
			bytes += vb
		}
		s.OK += int64(n)
	}
	s.Seconds = time.Since(start).Seconds()
	s.CPUSeconds = cpuSeconds() - cpu0
	if s.Seconds > 0 {
		s.MsgsPerSec = float64(s.OK) / s.Seconds
		s.MBPerSec = float64(bytes) / s.Seconds / 1e6
	}
	return s, nil
}

func writeCommand(w *bufio.Writer, args ...string) {
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// readEntry reads one [id, [field, value, ...]] entry and returns the id
// and the byte count of the values.
func readEntry(r *bufio.Reader) (string, int64, error) {
	n, err := readArrayLen(r)
	if err != nil || n != 2 {
		return "", 0, fmt.Errorf("entry of %d items: %w", n, errors.Join(errProtocol, err))
	}
	id, err := readBulk(r)
	if err != nil {
		return "", 0, err
	}
	k, err := readArrayLen(r)
	if err != nil {
		return "", 0, err
	}
	var vb int64
	for j := 0; j < k; j++ {
		v, err := readBulk(r)
		if err != nil {
			return "", 0, err
		}
		if j%2 == 1 {
			vb += int64(len(v))
		}
	}
	return string(id), vb, nil
}

func readLine(r *bufio.Reader) (byte, string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, "", fmt.Errorf("read: %w", err)
	}
	if len(line) < 3 {
		return 0, "", fmt.Errorf("line %q: %w", line, errProtocol)
	}
	if line[0] == '-' {
		return 0, "", fmt.Errorf("%s: %w", line[1:len(line)-2], errServer)
	}
	return line[0], line[1 : len(line)-2], nil
}

func readArrayLen(r *bufio.Reader) (int, error) {
	t, v, err := readLine(r)
	if err != nil {
		return 0, err
	}
	if t != '*' {
		return 0, fmt.Errorf("want array, got %q: %w", t, errProtocol)
	}
	return strconv.Atoi(v)
}

func readBulk(r *bufio.Reader) ([]byte, error) {
	t, v, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if t != '$' {
		return nil, fmt.Errorf("want bulk, got %q: %w", t, errProtocol)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("bulk length %q: %w", v, errProtocol)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return b[:n], nil
}

// cpuSeconds is this process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
