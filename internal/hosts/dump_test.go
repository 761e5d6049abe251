package hosts

import (
	"os"
	"testing"
)

func TestDump(t *testing.T) {
	if os.Getenv("DUMP") == "" {
		t.Skip()
	}
	for _, s := range samples {
		d := loadSample(t, s)
		rw := d.Wrap(wrapOpts(s.servers))
		t.Logf("==== %s\n%s", s.file, rw.Bytes)
	}
}
