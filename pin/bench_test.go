package pin

import (
	"strings"
	"testing"
)

// BenchmarkCompileSchema: the largest schema of empty subschemas the
// default caps accept (5,000). TestCompileSchema_CostBounded bounds its
// work in bytes; this measures its speed.
func BenchmarkCompileSchema(b *testing.B) {
	raw := []byte(`{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{},`, 4999), ",") + `]}`)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileSchema(raw, SchemaLimits{}); err != nil {
			b.Fatal(err)
		}
	}
}
