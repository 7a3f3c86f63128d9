package store

import (
	"errors"
	"fmt"
	"sort"

	"github.com/spoolmq/spool/internal/vfs"
)

// pageRun is a run of whole pages [from, to) of one file (file-relative).
type pageRun struct{ from, to int64 }

// EvictPageCache drops CommitLog pages from the page cache: every durable
// page of every file (topic ""), or the pages holding a topic's records. It
// uses madvise(MADV_PAGEOUT) on the mapping (MADV_DONTNEED when the kernel
// lacks PAGEOUT) and fadvise(POSIX_FADV_DONTNEED) on the file, and measures
// residency with mincore before and after. Pages past the flushed offset
// are left alone (they are dirty; dropping them would only force
// writeback).
func (st *DefaultMessageStore) EvictPageCache(topic string) (EvictReport, error) {
	c := st.commitLog
	flushed := c.flushedWhere.Load()
	runs := map[int64][]pageRun{} // file start -> runs
	if topic == "" {
		for _, mf := range c.mfq.snapshot() {
			end := min(mf.size, flushed-mf.from)
			if end > 0 {
				runs[mf.from] = []pageRun{{0, end}}
			}
		}
	} else {
		for _, qid := range st.QueueIDs(topic) {
			cq := st.consumeQueue(topic, qid, false)
			if cq == nil {
				continue
			}
			buf := make([]byte, 0, 64<<10)
			for off := cq.minOffset.Load(); off < cq.maxOffset.Load(); {
				ents, fileEnd, err := cq.readEntries(buf, off, 3000)
				if err != nil {
					return EvictReport{}, err
				}
				if len(ents) == 0 {
					off = fileEnd
					continue
				}
				for i := 0; i+CQEntrySize <= len(ents); i += CQEntrySize {
					e, ok := DecodeCQEntry(ents[i:])
					if !ok || e.Offset+int64(e.Size) > flushed {
						continue
					}
					base := e.Offset / c.cfg.MappedFileSizeCommitLog * c.cfg.MappedFileSizeCommitLog
					runs[base] = append(runs[base], pageRun{(e.Offset - base) &^ (osPageSize - 1), e.Offset - base + int64(e.Size)})
				}
				off += int64(len(ents) / CQEntrySize)
				buf = ents
			}
		}
	}
	var rep EvictReport
	var errs []error
	for base, rs := range runs {
		mf := c.mfq.find(base)
		if mf == nil {
			continue
		}
		rs = mergeRuns(rs, mf.size)
		r, err := evictFile(mf, rs)
		mf.release()
		rep.Files++
		rep.Bytes += r.Bytes
		rep.ResidentBefore += r.ResidentBefore
		rep.ResidentAfter += r.ResidentAfter
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

func mergeRuns(rs []pageRun, size int64) []pageRun {
	sort.Slice(rs, func(i, j int) bool { return rs[i].from < rs[j].from })
	var out []pageRun
	for _, r := range rs {
		r.to = min((r.to+osPageSize-1)&^(osPageSize-1), size)
		if n := len(out); n > 0 && r.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, r.to)
			continue
		}
		out = append(out, r)
	}
	return out
}

// evictFile drops the runs of one file, measuring residency through its
// mapping (its read mapping, or a temporary one, when the file is written
// with pwrite).
func evictFile(mf *MappedFile, rs []pageRun) (EvictReport, error) {
	var rep EvictReport
	if mf.spill != nil {
		return rep, nil
	}
	data := mf.data
	rmap := mf.rmap.Load()
	if data == nil && rmap != nil {
		data = *rmap
	}
	if data == nil {
		m, err := mf.f.Mmap(0, int(mf.size))
		if err != nil {
			return rep, fmt.Errorf("store: map %s for residency: %w", mf.path, err)
		}
		defer mf.f.Munmap(m)
		data = m
	}
	var errs []error
	for _, r := range rs {
		part := data[r.from:r.to]
		before, err := mf.f.Resident(part)
		errs = append(errs, err)
		if rmap != nil {
			// The read mapping's page-table entries keep pages from
			// being dropped; unmap them from it first.
			errs = append(errs, mf.f.Madvise(part, vfs.MadvDontNeed))
		}
		if err := mf.f.Madvise(part, vfs.MadvPageOut); err != nil {
			errs = append(errs, mf.f.Madvise(part, vfs.MadvDontNeed))
		}
		errs = append(errs, mf.f.Fadvise(r.from, r.to-r.from, vfs.FadvDontNeed))
		after, err := mf.f.Resident(part)
		errs = append(errs, err)
		rep.Bytes += r.to - r.from
		rep.ResidentBefore += before
		rep.ResidentAfter += after
	}
	mf.forgetResident() // what pulls found in memory may be gone now
	return rep, errors.Join(errs...)
}
