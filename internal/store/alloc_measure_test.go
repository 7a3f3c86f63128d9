package store

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// TestMeasureFileAllocation prints, for each allocation method, the file
// creation time and the steady figures afterwards: sequential pwrite
// throughput over the whole file (1 MiB writes, one fdatasync at the end)
// and the fdatasync latency of 4 KiB appends. It is a measurement, not a
// check: it runs only with SPOOL_MEASURE_ALLOC=<file size in MiB>.
func TestMeasureFileAllocation(t *testing.T) {
	mib, _ := strconv.Atoi(os.Getenv("SPOOL_MEASURE_ALLOC"))
	if mib <= 0 {
		t.Skip("set SPOOL_MEASURE_ALLOC=<MiB> to measure")
	}
	size := int64(mib) << 20
	fs := vfs.OS()
	dir := t.TempDir()
	for round := 0; round < 2; round++ {
		for _, method := range []string{AllocZeros, AllocFallocate, AllocZeroRange} {
			from := int64(round*3+len(method)) * size // distinct names
			start := time.Now()
			mf, err := createMappedFile(fs, dir, from, size, method, false)
			if err != nil {
				t.Fatal(err)
			}
			create := time.Since(start)

			// fdatasync latency of 4 KiB appends at the start of the file.
			rec := make([]byte, 4096)
			const syncs = 200
			start = time.Now()
			for i := 0; i < syncs; i++ {
				if _, err := mf.f.WriteAt(rec, int64(i)*4096); err != nil {
					t.Fatal(err)
				}
				if err := mf.f.Datasync(); err != nil {
					t.Fatal(err)
				}
			}
			syncLat := time.Since(start) / syncs

			// Sequential write throughput over the rest of the file.
			chunk := make([]byte, 1<<20)
			for i := range chunk {
				chunk[i] = byte(i)
			}
			start = time.Now()
			var n int64
			for off := int64(syncs * 4096); off+int64(len(chunk)) <= size; off += int64(len(chunk)) {
				if _, err := mf.f.WriteAt(chunk, off); err != nil {
					t.Fatal(err)
				}
				n += int64(len(chunk))
			}
			if err := mf.f.Datasync(); err != nil {
				t.Fatal(err)
			}
			wt := time.Since(start)
			t.Logf("round %d %-10s %4d MiB: create %8v  fdatasync(4 KiB append) %7v  write+sync %6.2f GB/s",
				round, method, mib, create.Round(time.Microsecond), syncLat.Round(time.Microsecond), float64(n)/wt.Seconds()/1e9)
			mf.destroy(true, 0, 0)
			os.Remove(filepath.Join(dir, fileName(from)))
		}
	}
}
