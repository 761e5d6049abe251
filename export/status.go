package export

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Status is what a serve process says of its export, in a file of its own
// that `mcp-guard tools` reads (serve and tools are separate processes).
type Status struct {
	PID      int       `json:"pid"`
	Endpoint string    `json:"endpoint"`
	Updated  time.Time `json:"updated"`
	Stats
}

// StatusDir is where serve processes write their export status, next to
// the ledger at ledgerPath.
func StatusDir(ledgerPath string) string {
	return filepath.Join(filepath.Dir(ledgerPath), "export")
}

func statusFile(dir string, pid int) string {
	return filepath.Join(dir, "serve-"+strconv.Itoa(pid)+".json")
}

// WriteStatus replaces this process's status file in dir.
func WriteStatus(dir string, s Status) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("otlp: status: %w", err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("otlp: status: %w", err)
	}
	p := statusFile(dir, s.PID)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("otlp: status: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("otlp: status: %w", err)
	}
	return nil
}

// RemoveStatus removes pid's status file.
func RemoveStatus(dir string, pid int) { _ = os.Remove(statusFile(dir, pid)) }

// ReadStatuses reads the status of every serve process in dir that still
// runs (files of processes that ended are skipped).
func ReadStatuses(dir string) ([]Status, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("otlp: status: %w", err)
	}
	var out []Status
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "serve-") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var s Status
		if json.Unmarshal(b, &s) != nil || s.PID <= 0 || syscall.Kill(s.PID, 0) == syscall.ESRCH {
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}
