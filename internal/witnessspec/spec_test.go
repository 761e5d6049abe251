package witnessspec

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Spec{
		"journal":           {Kind: Journal, Path: JournalSocket},
		"journal:/tmp/j":    {Kind: Journal, Path: "/tmp/j"},
		"syslog":            {Kind: Syslog, Path: SyslogSocket()},
		"syslog:/dev/log2":  {Kind: Syslog, Path: "/dev/log2"},
		"file:/x/heads.txt": {Kind: File, Path: "/x/heads.txt"},
		"otlp":              {Kind: OTLP},
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, _ := Parse(got.String()); back != got {
			t.Errorf("%q does not read back from its String %q", in, got.String())
		}
	}
	for in, want := range map[string]string{"otlp:http://x": "write \"otlp\"", "file:": "want file:PATH", "journal:": "is empty", "smoke": "unknown witness"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}
