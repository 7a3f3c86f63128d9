package vfs

import (
	"path/filepath"
	"testing"
)

// BenchmarkFaultFSSync is one 4 KiB append and its Datasync on a 16 MiB
// file under FaultFS (real syncs skipped), written through pwrite and
// through a mapping: the cost of recording what a sync made durable.
func BenchmarkFaultFSSync(b *testing.B) {
	const size = 16 << 20
	block := make([]byte, 4096)
	for i := range block {
		block[i] = byte(i)
	}
	for _, mapped := range []bool{false, true} {
		name := "pwrite"
		if mapped {
			name = "mmap"
		}
		b.Run(name, func(b *testing.B) {
			fs := NewFaultFS(OS())
			fs.SkipRealSync(true)
			f, err := fs.Create(filepath.Join(b.TempDir(), "f"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(size); err != nil {
				b.Fatal(err)
			}
			var m []byte
			if mapped {
				if m, err = f.Mmap(0, size); err != nil {
					b.Fatal(err)
				}
				defer f.Munmap(m)
			}
			b.SetBytes(int64(len(block)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				off := int64(i%(size/len(block))) * int64(len(block))
				if mapped {
					copy(m[off:], block)
				} else if _, err := f.WriteAt(block, off); err != nil {
					b.Fatal(err)
				}
				if err := f.Datasync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
