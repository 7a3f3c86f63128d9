package incidents

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/spoolmq/spool/internal/vfs"
)

// residency measures, with mincore on a fresh mapping (mapping faults
// nothing in), how many bytes of the given files' first limit bytes (all
// of them when limit <= 0) are in the page cache.
func residency(paths []string, limit int64) (resident, total int64, err error) {
	for _, p := range paths {
		if limit > 0 && total >= limit {
			break
		}
		f, err := vfs.Default.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return 0, 0, err
		}
		n, err := f.Size()
		if err != nil {
			f.Close()
			return 0, 0, err
		}
		if limit > 0 {
			n = min(n, limit-total)
		}
		if n == 0 {
			f.Close()
			continue
		}
		m, err := f.Mmap(0, int(n))
		if err != nil {
			f.Close()
			return 0, 0, fmt.Errorf("mmap %s: %w", p, err)
		}
		got, err := f.Resident(m)
		f.Munmap(m)
		f.Close()
		if err != nil {
			return 0, 0, err
		}
		resident += min(got, n)
		total += n
	}
	return resident, total, nil
}

// dropCache asks the kernel to drop the files' cached pages
// (posix_fadvise DONTNEED: only pages no process has mapped are dropped).
func dropCache(paths []string) error {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
		if err != nil {
			return fmt.Errorf("fadvise %s: %w", p, err)
		}
	}
	return nil
}
