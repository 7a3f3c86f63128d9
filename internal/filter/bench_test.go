package filter

import (
	"testing"

	"github.com/spoolmq/spool/message"
)

func BenchmarkSQLMatchRecord(b *testing.B) {
	f, err := CompileSQL("TAGS = 'TagA' AND price BETWEEN 100 AND 200 AND region IN ('eu', 'us')")
	if err != nil {
		b.Fatal(err)
	}
	rec := message.EncodeRecord(nil, &message.Inner{Topic: "TopicTest", Body: make([]byte, 256),
		Properties: map[string]string{"TAGS": "TagA", "price": "150", "region": "eu", "KEYS": "k1 k2",
			"UNIQ_KEY": "C0A8000200002A9F00000000000003E8"}}, "")
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if !f.MatchRecord(rec) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkTagMatchTagsCode(b *testing.B) {
	f, _ := CompileTags("TagA || TagB || TagC")
	code := message.TagsHashCode("TagC")
	b.ReportAllocs()
	for b.Loop() {
		if !f.MatchTagsCode(code) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkCompileSQL(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileSQL("TAGS = 'TagA' AND price BETWEEN 100 AND 200 AND region IN ('eu', 'us')"); err != nil {
			b.Fatal(err)
		}
	}
}
