package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// brokerMemory is one reading of a broker's memory from its
// GET_BROKER_RUNTIME_INFO (Spool's keys rssAnon, heapInuse, heapReleased,
// memoryReleases, in bytes); -1 where the broker does not report a key.
type brokerMemory struct {
	Addr            string  `json:"addr"`
	AfterSeconds    float64 `json:"after_seconds"`
	RSSAnonMiB      float64 `json:"rss_anon_mib"`
	HeapInuseMiB    float64 `json:"heap_inuse_mib"`
	HeapReleasedMiB float64 `json:"heap_released_mib"`
	Releases        int64   `json:"memory_releases"`
}

// readBrokerMemory asks addr for its runtime figures.
func readBrokerMemory(cli *transport.Client, addr string, after time.Duration) (brokerMemory, error) {
	resp, err := call(cli, addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return brokerMemory{}, err
	}
	var kv adminbody.KVTable
	if err := json.Unmarshal(resp.Body, &kv); err != nil {
		return brokerMemory{}, fmt.Errorf("GET_BROKER_RUNTIME_INFO answer of %s: %w", addr, err)
	}
	mib := func(k string) float64 {
		v, err := strconv.ParseInt(kv.Table[k], 10, 64)
		if err != nil {
			return -1
		}
		return float64(v) / (1 << 20)
	}
	rel, err := strconv.ParseInt(kv.Table["memoryReleases"], 10, 64)
	if err != nil {
		rel = -1
	}
	return brokerMemory{Addr: addr, AfterSeconds: after.Seconds(), RSSAnonMiB: mib("rssAnon"),
		HeapInuseMiB: mib("heapInuse"), HeapReleasedMiB: mib("heapReleased"), Releases: rel}, nil
}

// benchMemory reads the memory of every broker in addrs right after the
// load and, when wait > 0, again wait later. Brokers that do not answer
// are reported on stderr and left out.
func benchMemory(cli *transport.Client, addrs []string, wait time.Duration) []brokerMemory {
	sort.Strings(addrs)
	var out []brokerMemory
	read := func(after time.Duration) {
		for _, a := range addrs {
			m, err := readBrokerMemory(cli, a, after)
			if err != nil {
				fmt.Fprintf(os.Stderr, "memory of %s: %v\n", a, err)
				continue
			}
			out = append(out, m)
		}
	}
	read(0)
	if wait > 0 {
		time.Sleep(wait)
		read(wait)
	}
	return out
}

// printMemory prints the readings, one line each.
func printMemory(ms []brokerMemory) {
	for _, m := range ms {
		fmt.Printf("broker %s after %.0fs: rssAnon %.1f MiB  heapInuse %.1f MiB  heapReleased %.1f MiB  memoryReleases %d\n",
			m.Addr, m.AfterSeconds, m.RSSAnonMiB, m.HeapInuseMiB, m.HeapReleasedMiB, m.Releases)
	}
}

// brokerAddrs lists the distinct broker addresses of qs.
func brokerAddrs(qs []queueRef) []string {
	seen := map[string]bool{}
	var out []string
	for _, q := range qs {
		if !seen[q.addr] {
			seen[q.addr] = true
			out = append(out, q.addr)
		}
	}
	return out
}
