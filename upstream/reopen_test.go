package upstream

import (
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
)

func TestReopen_Paces(t *testing.T) {
	b := BackoffOf(config.DefaultLimits())
	ms := time.Millisecond
	type step struct{ lasted, retry, want time.Duration }
	tests := []struct {
		name  string
		steps []step
	}{
		{"a server that ends each stream at once: 1s, 2s, 4s … up to a minute", []step{
			{0, 0, time.Second}, {0, 0, 2 * time.Second}, {0, 0, 4 * time.Second}, {0, 0, 8 * time.Second},
			{0, 0, 16 * time.Second}, {0, 0, 32 * time.Second}, {0, 0, time.Minute}, {0, 0, time.Minute}}},
		{"its retry time does not make it faster", []step{
			{0, 50 * ms, 50 * ms}, {0, 50 * ms, 100 * ms}, {0, 50 * ms, 200 * ms}, {0, 50 * ms, 400 * ms}}},
		{"a retry under minResume is minResume", []step{{0, ms, minResume}}},
		{"a stream that lasted as long as the wait before it keeps the wait", []step{
			{0, 0, time.Second}, {0, 0, 2 * time.Second}, {5 * time.Second, 0, 2 * time.Second}}},
		{"one that lasted a minute starts over", []step{
			{0, 0, time.Second}, {0, 0, 2 * time.Second}, {time.Minute, 0, time.Second}}},
		{"a longer retry time is honoured, up to the longest wait", []step{
			{0, 5 * time.Second, 5 * time.Second}, {10 * time.Second, 5 * time.Second, 5 * time.Second},
			{0, time.Hour, time.Minute}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reopen{b: b}
			for i, s := range tt.steps {
				if got := r.next(s.lasted, s.retry); got != s.want {
					t.Fatalf("step %d: next(%s, %s) = %s; want %s", i, s.lasted, s.retry, got, s.want)
				}
			}
		})
	}
}
