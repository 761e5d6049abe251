package config

import (
	"strings"
	"testing"
)

// [notify] desktop: unset, true or false; anything else is refused.
func TestConfig_NotifyDesktop(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	c, err := Parse("c.toml", minimal, env)
	if err != nil || c.Notify.Desktop != nil {
		t.Fatalf("unset: %v, %v", c.Notify.Desktop, err)
	}
	for src, want := range map[string]bool{"[notify]\ndesktop = true\n": true, "[notify]\ndesktop = false\n": false} {
		c, err := Parse("c.toml", src+minimal, env)
		if err != nil || c.Notify.Desktop == nil || *c.Notify.Desktop != want {
			t.Fatalf("%q: %v, %v", src, c, err)
		}
	}
	for src, want := range map[string]string{
		"[notify]\ndesktop = \"yes\"\n": "desktop",
		"[notify]\nsound = true\n":      "notify.sound: unknown key",
	} {
		if _, err := Parse("c.toml", src+minimal, env); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %q", src, err, want)
		}
	}
}
