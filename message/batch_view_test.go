package message

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// DecodeBatchBodyView accepts and refuses what DecodeBatchBody does and
// gives the same members, on well-formed bodies and on bodies with a byte
// changed or cut.
func TestDecodeBatchBodyViewAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		members := make([]BatchMember, 1+r.IntN(5))
		for j := range members {
			props := map[string]string{}
			if r.IntN(3) > 0 {
				props[PropertyTags] = fmt.Sprintf("t%d", r.IntN(4))
			}
			if r.IntN(2) == 0 {
				props["k"] = "v"
			}
			members[j] = BatchMember{Flag: int32(r.IntN(3)), Body: bytes.Repeat([]byte{byte(j)}, r.IntN(40)), PropertiesString: EncodeProperties(props)}
		}
		body := EncodeBatchBody(nil, members)
		switch i % 3 {
		case 1:
			body[r.IntN(len(body))] ^= byte(1 + r.IntN(255))
		case 2:
			body = body[:r.IntN(len(body)+1)]
		}
		maxMembers := []int{0, 3}[i%2]
		want, err := DecodeBatchBody(body, maxMembers)
		got, err2 := DecodeBatchBodyView(body, maxMembers)
		if (err == nil) != (err2 == nil) || (err != nil && !errors.Is(err2, ErrBadBatch)) {
			t.Fatalf("body %x: DecodeBatchBody err %v, view err %v", body, err, err2)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("body %x: view %+v, want %+v", body, got, want)
		}
		if err == nil && i%3 == 0 && !reflect.DeepEqual(got, members) {
			for j := range members {
				members[j].TagsCode = got[j].TagsCode
			}
			if !reflect.DeepEqual(got, members) {
				t.Fatalf("round trip: %+v, want %+v", got, members)
			}
		}
	}
}

func BenchmarkDecodeBatchBody32(b *testing.B) {
	members := make([]BatchMember, 32)
	for i := range members {
		members[i] = BatchMember{Body: make([]byte, 1024), PropertiesString: EncodeProperties(map[string]string{PropertyTags: "a", PropertyUniqClientMessageIDKeyIdx: "AC110001000018B4AAC20000000"})}
	}
	body := EncodeBatchBody(nil, members)
	for _, v := range []struct {
		name string
		fn   func([]byte, int) ([]BatchMember, error)
	}{{"Copy", DecodeBatchBody}, {"View", DecodeBatchBodyView}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.fn(body, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
