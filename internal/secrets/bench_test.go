package secrets

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchRedactor has 20 known secrets of typical shapes and the found rules.
func benchRedactor(b *testing.B) (*Redactor, []string) {
	rng := rand.New(rand.NewPCG(1, 2))
	const an = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var list []Secret
	var vals []string
	for i := range 20 {
		n := 16 + rng.IntN(48)
		v := make([]byte, n)
		for j := range v {
			v[j] = an[rng.IntN(len(an))]
		}
		list = append(list, Secret{fmt.Sprintf("srv%d", i%4), fmt.Sprintf("TOKEN_%d", i), string(v)})
		vals = append(vals, string(v))
	}
	k, _ := NewKnown(list)
	return NewRedactor(k, Options{Found: true, RedactFound: true}), vals
}

const prose = "Listing /home/user/project: README.md (2.1 kB), go.mod, main.go; 3 files changed, 41 insertions(+), 7 deletions(-). "

func smallResult(text string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` + text + `"}],"isError":false}}`)
}

func bigResult(insert string) []byte {
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		sb.WriteString(prose)
		sb.WriteString(`line with \"quotes\" and a path C:\\tmp\\x and 100% done\n`)
	}
	s := sb.String()
	if insert != "" {
		s = s[:len(s)/2] + insert + s[len(s)/2:]
	}
	return smallResult(s)
}

func benchJSON(b *testing.B, r *Redactor, in []byte, wantHits bool) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_, hits := r.RedactJSON(in)
		if (len(hits) > 0) != wantHits {
			b.Fatalf("hits = %v", hits)
		}
	}
}

func BenchmarkRedactJSON(b *testing.B) {
	r, vals := benchRedactor(b)
	b.Run("small/no-match", func(b *testing.B) { benchJSON(b, r, smallResult(prose[:100]+"ok"), false) })
	b.Run("small/match", func(b *testing.B) { benchJSON(b, r, smallResult("token="+vals[7]+" "+prose[:60]), true) })
	b.Run("1MiB/no-match", func(b *testing.B) { benchJSON(b, r, bigResult(""), false) })
	b.Run("1MiB/match", func(b *testing.B) { benchJSON(b, r, bigResult(" key="+vals[3]+" "), true) })
}

func BenchmarkContains(b *testing.B) {
	r, _ := benchRedactor(b)
	in := []byte(`{"path":"/home/user/notes.txt","content":"` + prose + `","append":true}`)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if hits := r.Contains(in); len(hits) != 0 {
			b.Fatal(hits)
		}
	}
}
