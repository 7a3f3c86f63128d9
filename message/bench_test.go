package message

import (
	"fmt"
	"testing"
)

func BenchmarkEncodeRecord(b *testing.B) {
	for _, size := range []int{128, 1 << 10, 4 << 10} {
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			m := sampleInner(v4(10, 0, 0, 1, 50000), v4(192, 168, 0, 2, 10911))
			m.Body = make([]byte, size)
			props := EncodeProperties(m.Properties)
			buf := make([]byte, 0, 2*StoredSize(m))
			b.SetBytes(int64(RecordSize(m, len(props))))
			b.ReportAllocs()
			for b.Loop() {
				rec := EncodeRecord(buf[:0], m, props)
				PatchRecord(rec, 1, 2, 3)
			}
		})
	}
}

func BenchmarkParseRecordHeader(b *testing.B) {
	rec := EncodeRecord(nil, sampleInner(v4(10, 0, 0, 1, 50000), v4(192, 168, 0, 2, 10911)), "")
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRecordHeader(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTagsHashCode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		TagsHashCode("TagA")
	}
}

func BenchmarkNewUniqID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		NewUniqID()
	}
}

func BenchmarkViewRecord(b *testing.B) {
	rec := EncodeRecord(nil, sampleInner(v4(10, 0, 0, 1, 50000), v4(192, 168, 0, 2, 10911)), "")
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := ViewRecord(rec)
		if err != nil || v.QueueOffset() != 0 || len(v.Topic()) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkViewRecordDispatch reads what the store's dispatcher reads from
// a record: the view's checks and its fixed- and derived-offset fields.
func BenchmarkViewRecordDispatch(b *testing.B) {
	rec := EncodeRecord(nil, sampleInner(v4(10, 0, 0, 1, 50000), v4(192, 168, 0, 2, 10911)), "")
	PatchRecord(rec, 7, 0, 1700000000000)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	var sink int64
	for b.Loop() {
		v, err := ViewRecord(rec)
		if err != nil {
			b.Fatal(err)
		}
		tags, _ := v.Property(PropertyTags)
		sink += int64(v.QueueID()) + v.QueueOffset() + v.PhysicalOffset() + v.StoreTimestamp() +
			int64(v.SysFlag()) + int64(len(v.Topic())) + int64(len(tags))
	}
	_ = sink
}
