package secrets

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchRedactor has 20 known secrets of typical shapes and the found rules.
func benchRedactor(b testing.TB) (*Redactor, []string) {
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

// BenchmarkRedactJSON_Structured: 1 MiB as many small strings (a listing),
// with escapes, percent signs and pluses that wake the decoding views.
func BenchmarkRedactJSON_Structured(b *testing.B) {
	r, vals := benchRedactor(b)
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"items":[`)
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, `{"id":%d,"name":"file-%d.txt","path":"C:\\data\\file-%d.txt","url":"https://x.example/a?q=a%%20b+c&n=%d","size":%d},`, i, i, i, i, i*37)
	}
	sb.WriteString(`{}]}}}`)
	in := []byte(sb.String())
	b.Run("no-match", func(b *testing.B) { benchJSON(b, r, in, false) })
	m := []byte(strings.Replace(string(in), "file-500.txt", "file-"+vals[11]+".txt", 1))
	b.Run("match", func(b *testing.B) { benchJSON(b, r, m, true) })
}

func TestAutomatonSize(t *testing.T) {
	rd, _ := benchRedactor(t)
	r := rd.m.Load()
	t.Logf("20 secrets: exact DFA %d states x %d classes = %d KiB; hex DFA %d KiB",
		len(r.exact.outs), r.exact.nclass, len(r.exact.next)*4/1024, len(r.fold.next)*4/1024)
}

// BenchmarkRedactJSON_EscapeHeavy: a 1 MiB file read back as one string,
// a \n escape every 40 bytes and no quote until the end.
func BenchmarkRedactJSON_EscapeHeavy(b *testing.B) {
	r, _ := benchRedactor(b)
	line := `The quick brown fox jumps over the dog.\n`
	benchJSON(b, r, smallResult(strings.Repeat(line, (1<<20)/len(line))), false)
}

// BenchmarkRedactJSON_KeywordNoCredential: 1 MiB with rule keywords but no
// credential: each rule whose keyword occurs runs over the string.
func BenchmarkRedactJSON_KeywordNoCredential(b *testing.B) {
	r, _ := benchRedactor(b)
	s := strings.Repeat(prose, (1<<20)/len(prose))
	s = s[:len(s)/2] + " AKIA eyJ ghp_ -----BEGIN sk-ant- xoxb- AIza SG. hf_ npm_ " + s[len(s)/2:]
	benchJSON(b, r, smallResult(s), false)
}
