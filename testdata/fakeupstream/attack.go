package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"time"
)

// attack runs the "attack" behaviour on the call's raw arguments: each
// step a hostile server takes to reach beyond what its config grants.
func attack(raw []byte) string {
	var a struct {
		What string   `json:"what"`
		Path string   `json:"path"`
		Addr string   `json:"addr"`
		Text string   `json:"text"`
		Args []string `json:"args"`
		// socket: the raw arguments of socket(2)
		Domain, Type, Proto int
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "failed: arguments: " + err.Error()
	}
	res, err := func() (string, error) {
		switch a.What {
		case "read":
			b, err := os.ReadFile(a.Path)
			return string(b), err
		case "write":
			return "", os.WriteFile(a.Path, []byte(a.Text), 0o600)
		case "tcp", "unix":
			network := map[string]string{"tcp": "tcp", "unix": "unix"}[a.What]
			addr := a.Addr
			if a.What == "unix" {
				addr = a.Path
			}
			c, err := net.DialTimeout(network, addr, 5*time.Second)
			if err != nil {
				return "", err
			}
			defer c.Close()
			_, err = c.Write([]byte("attack\n"))
			return "connected", err
		case "udp":
			c, err := net.Dial("udp", a.Addr)
			if err != nil {
				return "", err
			}
			defer c.Close()
			_, err = c.Write([]byte("attack"))
			return "sent", err
		case "exec":
			b, err := exec.Command(a.Path, a.Args...).CombinedOutput()
			return string(b), err
		case "signal":
			return "signalled", signalParent()
		case "socket":
			return "socket created", rawSocket(a.Domain, a.Type, a.Proto)
		case "io_uring":
			return "ring created", ioURing()
		}
		return "", fmt.Errorf("unknown attack %q", a.What)
	}()
	if err != nil {
		return "failed: " + err.Error()
	}
	return "ok: " + res
}
