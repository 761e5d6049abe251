package config

import (
	"errors"
	"strings"
	"testing"
)

// namespace = false is honoured only for a server served alone: a config
// serving it beside others is refused, naming it; Only keeps it alone.
func TestConfig_NamespaceFalseOnlyAlone(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	one, err := Parse("c.toml", strings.Replace(minimal, `command = ["x"]`, "command = [\"x\"]\nnamespace = false", 1), env)
	if err != nil {
		t.Fatal(err)
	}
	if one.Servers[0].Namespaced() || one.CheckNamespace() != nil {
		t.Fatalf("one server, namespace = false: namespaced %v, check %v", one.Servers[0].Namespaced(), one.CheckNamespace())
	}
	src := strings.Replace(minimal, `command = ["x"]`, "command = [\"x\"]\nnamespace = false", 1) + "\n[[server]]\nname = \"db\"\ncommand = [\"y\"]\n"
	two, err := Parse("c.toml", src, env)
	if err != nil {
		t.Fatal(err)
	}
	var ce *Error
	if err := two.CheckNamespace(); !errors.As(err, &ce) || !strings.Contains(err.Error(), "server[1] (fs).namespace: false is honoured only when fs is served alone") {
		t.Fatalf("two servers, one namespace = false: %v", err)
	}
	if !two.Servers[1].Namespaced() {
		t.Fatal("a server without namespace is not namespaced")
	}
	if names, ok := two.Only("db"); !ok || names != nil || len(two.Servers) != 1 || two.CheckNamespace() != nil {
		t.Fatalf("Only(db): %v %v, servers %d", names, ok, len(two.Servers))
	}
	two, _ = Parse("c.toml", src, env)
	if names, ok := two.Only("nope"); ok || strings.Join(names, ",") != "fs,db" {
		t.Fatalf("Only(nope): %v %v", names, ok)
	}
	if _, ok := two.Only("fs"); !ok || two.CheckNamespace() != nil {
		t.Fatalf("Only(fs): %v", two.CheckNamespace())
	}
}
