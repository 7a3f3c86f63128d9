package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/spoolmq/spool/internal/vfs"
)

// stepClock is a vfs.FS whose clock advances 1 ms per reading, so file
// names are predictable and distinct without sleeping.
type stepClock struct {
	vfs.FS
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const baseTs = int64(1_780_000_000_000) // ms

func openTest(t *testing.T, dir string, slots, num int) *Service {
	t.Helper()
	s, err := Open(Config{Dir: dir, MaxHashSlotNum: slots, MaxIndexNum: num,
		FS: &stepClock{FS: vfs.OS(), t: time.UnixMilli(baseTs)}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func query(t *testing.T, s *Service, topic, key string) []int64 {
	t.Helper()
	r, err := s.Query(topic, key, 1000, 0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	return r.PhyOffsets
}

func mustPut(t *testing.T, s *Service, topic string, keys []string, uniq string, phy, ts int64) {
	t.Helper()
	if err := s.Put(topic, keys, uniq, phy, ts); err != nil {
		t.Fatal(err)
	}
}

func TestKeyHashMatchesJava(t *testing.T) {
	cases := map[string]int32{
		"":                   0,
		"hello":              99162322,
		"Aa":                 2112,
		"BB":                 2112,
		"polygenelubricants": 0, // hashCode is Integer.MIN_VALUE
		"\U0001F600":         1772899,
		"TopicTest#KEY1":     KeyHash("TopicTest#KEY1"),
	}
	for s, want := range cases {
		if got := KeyHash(s); got != want {
			t.Errorf("KeyHash(%q) = %d, want %d", s, got, want)
		}
	}
	if javaStringHash("polygenelubricants") != -2147483648 {
		t.Fatal("MIN_VALUE string")
	}
	if h := javaStringHash("abc"); h != 96354 {
		t.Fatalf("abc %d", h)
	}
	if KeyHash("a#b") < 0 {
		t.Fatal("negative")
	}
}

// TestTopicKeyHashIsKeyHashOfIndexKey compares the hash computed over
// topic and key with the hash of the joined "topic#key", also for
// characters outside the BMP and for invalid UTF-8 on either side of '#'.
func TestTopicKeyHashIsKeyHashOfIndexKey(t *testing.T) {
	parts := []string{"", "T", "TopicTest", "KEY1", "\U0001F600", "\xe2\x82", "\xac", "\x80k", "é", "polygenelubricants", "a#b"}
	for _, topic := range parts {
		for _, key := range parts {
			if got, want := TopicKeyHash(topic, key), KeyHash(topic+"#"+key); got != want {
				t.Errorf("TopicKeyHash(%q, %q) = %d, KeyHash of the joined key = %d", topic, key, got, want)
			}
		}
	}
}

// TestJavaStringHashOverUTF16Units checks the hash, whose ASCII runs are
// taken four bytes at a time, against the plain definition over Java's
// UTF-16 code units, for every length up to 13 and a non-ASCII character
// (or invalid byte) at each position.
func TestJavaStringHashOverUTF16Units(t *testing.T) {
	plain := func(s string) int32 {
		var h int32
		for _, u := range utf16.Encode([]rune(s)) {
			h = 31*h + int32(u)
		}
		return h
	}
	for n := 0; n <= 13; n++ {
		// ASCII from both ends of its range: NUL and DEL, with letters.
		ascii := strings.Repeat("\x00k", n)[:n/2] + strings.Repeat("\x7fZ", n)[:n-n/2]
		if got, want := javaStringHash(ascii), plain(ascii); got != want {
			t.Errorf("javaStringHash(%q) = %d, want %d", ascii, got, want)
		}
		for i := 0; i <= n; i++ {
			for _, odd := range []string{"é", "\U0001F600", "\x80", "\xe2\x82"} {
				s := ascii[:i] + odd + ascii[i:]
				if got, want := javaStringHash(s), plain(s); got != want {
					t.Errorf("javaStringHash(%q) = %d, want %d", s, got, want)
				}
				if got, want := javaStringHashFrom(javaStringHash(ascii[:i]), odd+ascii[i:]), plain(s); got != want {
					t.Errorf("javaStringHashFrom over %q split at %d = %d, want %d", s, i, got, want)
				}
			}
		}
	}
}

func TestSplitKeys(t *testing.T) {
	if got := SplitKeys(" k1  k2 k3 "); !slices.Equal(got, []string{"k1", "k2", "k3"}) {
		t.Fatalf("%q", got)
	}
	if SplitKeys("") != nil {
		t.Fatal("empty")
	}
	if got := AppendKeys([]string{"x"}, "a  b "); !slices.Equal(got, []string{"x", "a", "b"}) {
		t.Fatalf("AppendKeys kept %q", got)
	}
}

func TestFileNameFormat(t *testing.T) {
	ts := time.Date(2026, 3, 4, 5, 6, 7, 89_000_000, time.Local)
	if got := fileName(ts); got != "20260304050607089" {
		t.Fatalf("name %s", got)
	}
	back, ok := parseFileName("20260304050607089")
	if !ok || !back.Equal(ts) {
		t.Fatalf("parse %v %v", back, ok)
	}
	for _, bad := range []string{"2026030405060708", "2026030405060708x", "abc"} {
		if _, ok := parseFileName(bad); ok {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestPutQuery(t *testing.T) {
	s := openTest(t, t.TempDir(), 16, 64)
	defer s.Close()
	mustPut(t, s, "T", []string{"k1", "k2"}, "U1", 100, baseTs)
	mustPut(t, s, "T", []string{"k1"}, "U2", 200, baseTs+1000)
	mustPut(t, s, "T2", []string{"k1"}, "", 300, baseTs+2000)
	mustPut(t, s, "T", nil, "", 400, baseTs+3000) // no keys: nothing indexed

	if got := query(t, s, "T", "k1"); !slices.Equal(got, []int64{200, 100}) {
		t.Fatalf("T#k1 %v", got)
	}
	if got := query(t, s, "T", "k2"); !slices.Equal(got, []int64{100}) {
		t.Fatalf("T#k2 %v", got)
	}
	if got := query(t, s, "T", "U2"); !slices.Equal(got, []int64{200}) {
		t.Fatalf("T#U2 %v", got)
	}
	if got := query(t, s, "T2", "k1"); !slices.Equal(got, []int64{300}) {
		t.Fatalf("T2#k1 %v", got)
	}
	if got := query(t, s, "T", "nope"); len(got) != 0 {
		t.Fatalf("T#nope %v", got)
	}
	r, _ := s.Query("T", "k1", 1, 0, 1<<62)
	if !slices.Equal(r.PhyOffsets, []int64{200}) || r.LastUpdatePhyOffset != 300 || r.LastUpdateTimestamp != baseTs+2000 {
		t.Fatalf("maxNum 1: %+v", r)
	}
	// A record at or below the indexed offset is ignored.
	mustPut(t, s, "T", []string{"k1"}, "", 300, baseTs+2000)
	if got := query(t, s, "T", "k1"); len(got) != 2 {
		t.Fatalf("duplicate indexed: %v", got)
	}
	st := s.Stats()
	if st.Keys != 6 || st.Records != 3 || st.Files != 1 || st.IndexedPhy != 300 {
		t.Fatalf("stats %+v", st)
	}
}

func TestOnDiskLayout(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 4, 8)
	mustPut(t, s, "T", []string{"a"}, "", 1000, baseTs)
	mustPut(t, s, "T", []string{"a"}, "", 2000, baseTs+5500)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := os.ReadDir(dir)
	if len(names) != 1 {
		t.Fatalf("files %v", names)
	}
	b, err := os.ReadFile(filepath.Join(dir, names[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 40+4*4+8*20 {
		t.Fatalf("size %d", len(b))
	}
	be := binary.BigEndian
	if be.Uint64(b[0:]) != uint64(baseTs) || be.Uint64(b[8:]) != uint64(baseTs+5500) ||
		be.Uint64(b[16:]) != 1000 || be.Uint64(b[24:]) != 2000 || be.Uint32(b[32:]) != 1 || be.Uint32(b[36:]) != 3 {
		t.Fatalf("header % x", b[:40])
	}
	kh := KeyHash("T#a")
	slot := int(kh % 4)
	if v := be.Uint32(b[40+4*slot:]); v != 2 {
		t.Fatalf("slot %d = %d", slot, v)
	}
	e1 := b[40+16+20*1:]
	e2 := b[40+16+20*2:]
	if int32(be.Uint32(e1)) != kh || be.Uint64(e1[4:]) != 1000 || be.Uint32(e1[12:]) != 0 || be.Uint32(e1[16:]) != 0 {
		t.Fatalf("entry 1 % x", e1[:20])
	}
	if int32(be.Uint32(e2)) != kh || be.Uint64(e2[4:]) != 2000 || be.Uint32(e2[12:]) != 5 || be.Uint32(e2[16:]) != 1 {
		t.Fatalf("entry 2 % x", e2[:20])
	}
	if !isIndexFileName(names[0].Name()) {
		t.Fatalf("name %s", names[0].Name())
	}
}

func TestHashCollisionChains(t *testing.T) {
	// One slot: every key shares a chain.
	s := openTest(t, t.TempDir(), 1, 64)
	defer s.Close()
	for i := 0; i < 20; i++ {
		mustPut(t, s, "T", []string{fmt.Sprintf("k%d", i%4)}, "", int64(i*100), baseTs+int64(i)*1000)
	}
	for k := 0; k < 4; k++ {
		var want []int64
		for i := 19; i >= 0; i-- {
			if i%4 == k {
				want = append(want, int64(i*100))
			}
		}
		if got := query(t, s, "T", fmt.Sprintf("k%d", k)); !slices.Equal(got, want) {
			t.Fatalf("k%d: %v want %v", k, got, want)
		}
	}
	// Equal Java hashes ("Aa" and "BB") cannot be told apart by the index:
	// both offsets come back and the caller checks the record.
	mustPut(t, s, "T", []string{"Aa"}, "", 5000, baseTs+50000)
	mustPut(t, s, "T", []string{"BB"}, "", 5100, baseTs+51000)
	if got := query(t, s, "T", "Aa"); !slices.Equal(got, []int64{5100, 5000}) {
		t.Fatalf("collision %v", got)
	}
}

func TestTimeRangeFilter(t *testing.T) {
	s := openTest(t, t.TempDir(), 8, 64)
	defer s.Close()
	for i := 0; i < 10; i++ {
		mustPut(t, s, "T", []string{"k"}, "", int64(i), baseTs+int64(i)*10_000)
	}
	r, err := s.Query("T", "k", 100, baseTs+20_000, baseTs+50_000)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.PhyOffsets, []int64{5, 4, 3, 2}) {
		t.Fatalf("range %v", r.PhyOffsets)
	}
	// Times are stored in whole seconds from the file's begin time.
	s2 := openTest(t, t.TempDir(), 8, 64)
	defer s2.Close()
	mustPut(t, s2, "T", []string{"k"}, "", 1, baseTs)
	mustPut(t, s2, "T", []string{"k"}, "", 2, baseTs+1999)
	r, _ = s2.Query("T", "k", 10, baseTs+1000, baseTs+1000)
	if !slices.Equal(r.PhyOffsets, []int64{2}) {
		t.Fatalf("second rounding %v", r.PhyOffsets)
	}
	r, _ = s2.Query("T", "k", 10, baseTs+3000, baseTs+9000)
	if len(r.PhyOffsets) != 0 {
		t.Fatalf("outside %v", r.PhyOffsets)
	}
}

func TestRollAndReload(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 4, 8) // 7 entries per file
	for i := 0; i < 20; i++ {
		mustPut(t, s, "T", []string{"k", fmt.Sprintf("x%d", i)}, "", int64(i*10), baseTs+int64(i)*1000)
	}
	// two keys per record, whole records per file: 3 records (6 entries) a file.
	st := s.Stats()
	if st.Files != 7 || st.FilesCreated != 7 {
		t.Fatalf("stats %+v", st)
	}
	want := make([]int64, 0, 20)
	for i := 19; i >= 0; i-- {
		want = append(want, int64(i*10))
	}
	if got := query(t, s, "T", "k"); !slices.Equal(got, want) {
		t.Fatalf("across files %v", got)
	}
	if got := query(t, s, "T", "x7"); !slices.Equal(got, []int64{70}) {
		t.Fatalf("x7 %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := os.ReadDir(dir)
	for i := 1; i < len(names); i++ {
		if names[i-1].Name() >= names[i].Name() {
			t.Fatalf("names not increasing: %v", names)
		}
	}

	s = openTest(t, dir, 4, 8)
	defer s.Close()
	if got := query(t, s, "T", "k"); !slices.Equal(got, want) {
		t.Fatalf("after reload %v", got)
	}
	if s.IndexedPhyOffset() != 190 {
		t.Fatalf("indexed %d", s.IndexedPhyOffset())
	}
	mustPut(t, s, "T", []string{"k"}, "", 190, baseTs) // already there
	mustPut(t, s, "T", []string{"k"}, "", 200, baseTs+20_000)
	if got := query(t, s, "T", "k"); len(got) != 21 || got[0] != 200 {
		t.Fatalf("after more puts %v", got)
	}
}

func TestRecordLargerThanFile(t *testing.T) {
	s := openTest(t, t.TempDir(), 4, 4) // 3 entries per file
	defer s.Close()
	keys := []string{"a", "b", "c", "d", "e"}
	mustPut(t, s, "T", keys, "U", 50, baseTs)
	for _, k := range append(keys, "U") {
		if got := query(t, s, "T", k); !slices.Equal(got, []int64{50}) {
			t.Fatalf("%s: %v", k, got)
		}
	}
	if s.Stats().Files != 2 {
		t.Fatalf("files %d", s.Stats().Files)
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 4, 8)
	for i := 0; i < 20; i++ { // 6 entries a file (3 records), 7 files
		mustPut(t, s, "T", []string{"k", "y"}, "", int64(i*10), baseTs+int64(i)*1000)
	}
	// Cut inside the 4th file (records 9,10,11): keep offsets < 105.
	if err := s.Truncate(105); err != nil {
		t.Fatal(err)
	}
	if got := query(t, s, "T", "k"); len(got) != 11 || got[0] != 100 {
		t.Fatalf("after truncate %v", got)
	}
	if s.IndexedPhyOffset() != 100 || s.Stats().Files != 4 {
		t.Fatalf("indexed %d files %d", s.IndexedPhyOffset(), s.Stats().Files)
	}
	// The dispatcher re-feeds from the recovered end; new records land.
	mustPut(t, s, "T", []string{"k"}, "", 100, baseTs) // already indexed
	mustPut(t, s, "T", []string{"k", "new"}, "", 105, baseTs+30_000)
	if got := query(t, s, "T", "new"); !slices.Equal(got, []int64{105}) {
		t.Fatalf("new %v", got)
	}
	if got := query(t, s, "T", "k"); len(got) != 12 || got[0] != 105 {
		t.Fatalf("k %v", got)
	}
	// Cut on a file boundary: the whole newer files go.
	if err := s.Truncate(60); err != nil {
		t.Fatal(err)
	}
	if got := query(t, s, "T", "k"); !slices.Equal(got, []int64{50, 40, 30, 20, 10, 0}) {
		t.Fatalf("boundary %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, 4, 8)
	defer s.Close()
	if got := query(t, s, "T", "y"); !slices.Equal(got, []int64{50, 40, 30, 20, 10, 0}) {
		t.Fatalf("reloaded %v", got)
	}
	if err := s.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if got := query(t, s, "T", "y"); len(got) != 0 || s.IndexedPhyOffset() != -1 {
		t.Fatalf("truncate to 0: %v %d", got, s.IndexedPhyOffset())
	}
	mustPut(t, s, "T", []string{"y"}, "", 0, baseTs)
	if got := query(t, s, "T", "y"); !slices.Equal(got, []int64{0}) {
		t.Fatalf("refill %v", got)
	}
}

// A kill between the slot and header writes leaves slots pointing past
// indexCount; Open repairs the chain instead of losing it.
func TestReloadRepairsInterruptedPut(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 2, 16)
	mustPut(t, s, "T", []string{"k"}, "", 10, baseTs)
	mustPut(t, s, "T", []string{"k"}, "", 20, baseTs+1000)
	mustPut(t, s, "T", []string{"k"}, "", 30, baseTs+2000)
	s.Close()
	path := onlyFile(t, dir)
	b, _ := os.ReadFile(path)
	binary.BigEndian.PutUint32(b[36:], 3) // header as if the third put's header write was lost
	os.WriteFile(path, b, 0o644)

	s = openTest(t, dir, 2, 16)
	defer s.Close()
	if got := query(t, s, "T", "k"); !slices.Equal(got, []int64{20, 10}) {
		t.Fatalf("after repair %v", got)
	}
	if s.IndexedPhyOffset() != 20 {
		t.Fatalf("indexed %d", s.IndexedPhyOffset())
	}
	mustPut(t, s, "T", []string{"k"}, "", 30, baseTs+2000)
	if got := query(t, s, "T", "k"); !slices.Equal(got, []int64{30, 20, 10}) {
		t.Fatalf("re-put %v", got)
	}
}

// Garbage in the middle of the newest file (lost pages after a machine
// crash): Truncate keeps the valid prefix minus its last record.
func TestTruncateCutsAtGarbage(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 4, 32)
	for i := 1; i <= 10; i++ {
		mustPut(t, s, "T", []string{"k"}, fmt.Sprintf("u%d", i), int64(i*10), baseTs+int64(i)*1000)
	}
	s.Close()
	path := onlyFile(t, dir)
	b, _ := os.ReadFile(path)
	// zero entries 13.. (records 7.. lost), header still says 21.
	off := 40 + 4*4 + 13*20
	clear(b[off : 40+4*4+21*20])
	os.WriteFile(path, b, 0o644)

	s = openTest(t, dir, 4, 32)
	defer s.Close()
	if err := s.Truncate(1 << 62); err != nil {
		t.Fatal(err)
	}
	// entries 1..12 are records 1..6; entry 13 is bad, so record 6 (which
	// may be incomplete) goes too.
	if got := query(t, s, "T", "k"); !slices.Equal(got, []int64{50, 40, 30, 20, 10}) {
		t.Fatalf("after cut %v", got)
	}
	if got := query(t, s, "T", "u6"); len(got) != 0 {
		t.Fatalf("u6 %v", got)
	}
	if s.IndexedPhyOffset() != 50 || s.Stats().Repaired != 10 {
		t.Fatalf("indexed %d stats %+v", s.IndexedPhyOffset(), s.Stats())
	}
}

func TestDeleteExpired(t *testing.T) {
	s := openTest(t, t.TempDir(), 4, 8)
	defer s.Close()
	for i := 0; i < 12; i++ { // 6 per file: 2 files
		mustPut(t, s, "T", []string{"k"}, "", int64(i*10), baseTs+int64(i)*1000)
	}
	if s.Stats().Files != 2 {
		t.Fatalf("files %d", s.Stats().Files)
	}
	n, err := s.DeleteExpired(50) // first file ends at 60
	if err != nil || n != 0 {
		t.Fatalf("%d %v", n, err)
	}
	n, err = s.DeleteExpired(1 << 40) // never the newest
	if err != nil || n != 1 {
		t.Fatalf("%d %v", n, err)
	}
	if got := query(t, s, "T", "k"); !slices.Equal(got, []int64{110, 100, 90, 80, 70}) {
		t.Fatalf("after delete %v", got)
	}
}

func TestLagAndFlush(t *testing.T) {
	s := openTest(t, t.TempDir(), 4, 8)
	if s.IndexLagBytes(1000) != 1000 {
		t.Fatalf("lag %d", s.IndexLagBytes(1000))
	}
	mustPut(t, s, "T", nil, "", 400, baseTs)
	s.Dispatched(600)
	s.Dispatched(500) // never goes back
	if s.IndexLagBytes(1000) != 400 || s.IndexLagBytes(100) != 0 {
		t.Fatalf("lag %d", s.IndexLagBytes(1000))
	}
	mustPut(t, s, "T", []string{"k"}, "", 700, baseTs+3000)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if s.FlushedTimestamp() != baseTs+3000 {
		t.Fatalf("flushed ts %d", s.FlushedTimestamp())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("T", []string{"k"}, "", 800, baseTs); err == nil {
		t.Fatal("put after close")
	}
	if _, err := s.Query("T", "k", 1, 0, 1); err != ErrClosed {
		t.Fatalf("query after close: %v", err)
	}
}

func TestOpenRemovesCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 4, 8)
	mustPut(t, s, "T", []string{"k"}, "", 10, baseTs)
	s.Close()
	// a truncated newer file, a file with an impossible header, and a
	// file that is not an index file at all
	os.WriteFile(filepath.Join(dir, "29991231235959999"), []byte("short"), 0o644)
	bad := make([]byte, FileSize(4, 8))
	binary.BigEndian.PutUint32(bad[36:], 1000)
	os.WriteFile(filepath.Join(dir, "29991231235959998"), bad, 0o644)
	os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644)

	s = openTest(t, dir, 4, 8)
	defer s.Close()
	if st := s.Stats(); st.CorruptDropped != 2 || st.Files != 1 {
		t.Fatalf("stats %+v", st)
	}
	if got := query(t, s, "T", "k"); !slices.Equal(got, []int64{10}) {
		t.Fatalf("query %v", got)
	}
	// Another geometry: the existing file does not fit and is dropped.
	s.Close()
	s2, err := Open(Config{Dir: dir, MaxHashSlotNum: 8, MaxIndexNum: 8, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Stats().CorruptDropped != 1 {
		t.Fatalf("geometry change %+v", s2.Stats())
	}
}

func TestConcurrentQueryDuringPut(t *testing.T) {
	s := openTest(t, t.TempDir(), 8, 16)
	defer s.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for q := 0; q < 3; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := s.Query("T", "k", 64, 0, 1<<62)
				if err != nil {
					t.Error(err)
					return
				}
				for i := 1; i < len(r.PhyOffsets); i++ {
					if r.PhyOffsets[i] >= r.PhyOffsets[i-1] {
						t.Errorf("not newest first: %v", r.PhyOffsets)
						return
					}
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		if err := s.Put("T", []string{"k", "z"}, "", int64(i), baseTs+int64(i)); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			if _, err := s.DeleteExpired(int64(i - 40)); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
}

func onlyFile(t *testing.T, dir string) string {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 1 {
		t.Fatalf("files %v %v", names, err)
	}
	return filepath.Join(dir, names[0].Name())
}

func BenchmarkPutTwoKeys(b *testing.B) {
	s, err := Open(Config{Dir: b.TempDir(), MaxHashSlotNum: 1 << 16, MaxIndexNum: 1 << 20, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	keys := []string{"order-1"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		keys[0] = "order-" + strconv.Itoa(i)
		if err := s.Put("TopicTest", keys, "7F0000010001", int64(i)*200, baseTs+int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQuery(b *testing.B) {
	s, err := Open(Config{Dir: b.TempDir(), MaxHashSlotNum: 1 << 12, MaxIndexNum: 1 << 16, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 50000; i++ {
		if err := s.Put("T", []string{"k" + strconv.Itoa(i%5000)}, "", int64(i)*200, baseTs+int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := s.Query("T", "k"+strconv.Itoa(i%5000), 32, 0, 1<<62)
		if err != nil || len(r.PhyOffsets) != 10 {
			b.Fatalf("%v %v", r.PhyOffsets, err)
		}
	}
}

// failFS makes WriteAt fail once armed.
type failFS struct {
	stepClock
	armed *bool
}

type failFile struct {
	vfs.File
	armed *bool
}

func (f failFile) WriteAt(p []byte, off int64) (int, error) {
	if *f.armed {
		return 0, errors.New("injected EIO")
	}
	return f.File.WriteAt(p, off)
}

func (n *failFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := n.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return failFile{f, n.armed}, nil
}

func TestWriteErrorStopsBuilding(t *testing.T) {
	armed := false
	s, err := Open(Config{Dir: t.TempDir(), MaxHashSlotNum: 4, MaxIndexNum: 8, Logger: quiet,
		FS: &failFS{stepClock{FS: vfs.OS(), t: time.UnixMilli(baseTs)}, &armed}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustPut(t, s, "T", []string{"k"}, "", 10, baseTs)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	armed = true
	// Put buffers; the write-back (at Flush here) meets the failing disk.
	mustPut(t, s, "T", []string{"k"}, "", 20, baseTs)
	if err := s.Flush(); !errors.Is(err, ErrBroken) {
		t.Fatalf("flush with failing disk: %v", err)
	}
	armed = false
	if err := s.Put("T", []string{"k"}, "", 30, baseTs); !errors.Is(err, ErrBroken) {
		t.Fatalf("put after failure: %v", err)
	}
	// What was buffered stays queryable until restart.
	if got := query(t, s, "T", "k"); !slices.Equal(got, []int64{20, 10}) {
		t.Fatalf("query after failure %v", got)
	}
	if s.IndexedPhyOffset() != 20 {
		t.Fatalf("indexed %d", s.IndexedPhyOffset())
	}
}

// gateFS blocks Datasync until released.
type gateFS struct {
	stepClock
	entered chan struct{}
	release chan struct{}
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f gateFile) Datasync() error {
	f.g.entered <- struct{}{}
	<-f.g.release
	return nil
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return gateFile{f, g}, nil
}

func TestSlowFlushDoesNotBlockPut(t *testing.T) {
	g := &gateFS{stepClock: stepClock{FS: vfs.OS(), t: time.UnixMilli(baseTs)},
		entered: make(chan struct{}), release: make(chan struct{})}
	s, err := Open(Config{Dir: t.TempDir(), MaxHashSlotNum: 4, MaxIndexNum: 8, Logger: quiet, FS: g})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "T", []string{"k"}, "", 10, baseTs)
	done := make(chan error)
	go func() { done <- s.Flush() }()
	<-g.entered                      // Flush is inside fdatasync now
	for i := int64(2); i < 10; i++ { // rolls to new files too
		mustPut(t, s, "T", []string{"k"}, "", i*10, baseTs+i*1000)
	}
	if got := query(t, s, "T", "k"); len(got) != 9 {
		t.Fatalf("query during flush %v", got)
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		for range g.entered {
		}
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	close(g.entered)
}

// Puts are buffered and written back in batches: enough records to cross
// the write-back threshold several times, queried before and after a
// reopen, must all be found (the slot pages written back are complete).
func TestWriteBackBatches(t *testing.T) {
	dir := t.TempDir()
	const slots, records = 5000, 3 * writeBackBytes / EntrySize
	s := openTest(t, dir, slots, records+16)
	for i := 1; i <= records; i++ {
		mustPut(t, s, "T", nil, "u"+strconv.Itoa(i), int64(i)*100, baseTs+int64(i))
	}
	check := func(s *Service) {
		t.Helper()
		for _, i := range []int{1, 2, records / 3, records/3 + 1, records / 2, records - 1, records} {
			if got := query(t, s, "T", "u"+strconv.Itoa(i)); !slices.Contains(got, int64(i)*100) {
				t.Fatalf("u%d: %v", i, got)
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, slots, records+16)
	defer s.Close()
	if s.IndexedPhyOffset() != int64(records)*100 {
		t.Fatalf("indexed %d after reopen", s.IndexedPhyOffset())
	}
	check(s)
}

// A process killed with changes still buffered: the files describe the
// last write-back, so IndexedPhyOffset resumes there and the dispatcher
// re-feeds the rest.
func TestKillLosesOnlyBufferedTail(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 16, 64)
	mustPut(t, s, "T", []string{"k"}, "", 10, baseTs)
	mustPut(t, s, "T", []string{"k"}, "", 20, baseTs+1000)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "T", []string{"k"}, "", 30, baseTs+2000) // buffered only
	if got := query(t, s, "T", "k"); !slices.Equal(got, []int64{30, 20, 10}) {
		t.Fatalf("before kill %v", got)
	}
	// "Kill": open the directory again without closing s.
	s2 := openTest(t, dir, 16, 64)
	defer s2.Close()
	if s2.IndexedPhyOffset() != 20 {
		t.Fatalf("indexed %d after kill", s2.IndexedPhyOffset())
	}
	mustPut(t, s2, "T", []string{"k"}, "", 30, baseTs+2000)
	if got := query(t, s2, "T", "k"); !slices.Equal(got, []int64{30, 20, 10}) {
		t.Fatalf("after re-feed %v", got)
	}
}
