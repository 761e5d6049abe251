package secrets

import "testing"

func TestIsSecretName(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"GITHUB_TOKEN", true}, {"token", true}, {"MY_SECRET_VALUE", true}, {"DB_PASSWORD", true},
		{"PASSWD", true}, {"SMTP_PASS", true}, {"PWD_FILE", true}, {"OPENAI_APIKEY", true},
		{"AWS_SECRET_ACCESS_KEY", true}, {"aws_access_key", true}, {"NPM_AUTH", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true}, {"api_key", true},
		{"GIT_AUTHOR_NAME", false}, {"PASSTHROUGH", false}, {"TOKENIZER_PATH", false},
		{"KEYBOARD", false}, {"KEY_ID", false}, {"AUTHOR", false}, {"HOME", false},
		{"PATH", false}, {"SECRETARY", false}, {"BYPASS", false}, {"MONKEY", false},
	} {
		if got := IsSecretName(c.name, nil, nil); got != c.want {
			t.Errorf("IsSecretName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
	if !IsSecretName("DATABASE_URL", []string{"DATABASE_URL"}, nil) {
		t.Error("secret_env does not make a name secret")
	}
	if IsSecretName("PUBLIC_TOKEN", nil, []string{"PUBLIC_TOKEN"}) {
		t.Error("public_env does not exempt a name")
	}
	if !IsSecretName("X_TOKEN", []string{"X_TOKEN"}, []string{"X_TOKEN"}) {
		t.Error("a name in both lists is not a secret")
	}
}

func TestNewKnown_SkipsShortAndDuplicates(t *testing.T) {
	k, short := NewKnown([]Secret{
		{"a", "A_TOKEN", "12345678"}, {"a", "B_TOKEN", "1234567"}, {"b", "C_TOKEN", "12345678"}, {"b", "EMPTY_KEY", ""},
	})
	if len(k.list) != 1 || k.list[0].Server != "a" || k.list[0].Name != "A_TOKEN" {
		t.Errorf("known = %v", k.list)
	}
	if len(short) != 2 || short[0] != (Ref{"a", "B_TOKEN"}) || short[1] != (Ref{"b", "EMPTY_KEY"}) {
		t.Errorf("short = %v", short)
	}
}
