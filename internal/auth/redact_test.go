package auth

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretsStayOutOfPrintsAndLogs(t *testing.T) {
	u := User{Username: "alice", Password: "hunter2-secret", Type: Normal, Status: Enabled}
	c := Credentials{AccessKey: "alice", SecretKey: "hunter2-secret", SecurityToken: "token-secret"}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("x", "user", u, "cred", c, "ptr", &u)
	out := buf.String() + fmt.Sprintf("%v %+v %#v %s %v %+v %#v", u, u, u, u, c, c, c) + fmt.Sprint(&u, []User{u}, map[string]User{"a": u})
	if strings.Contains(out, "secret") {
		t.Fatalf("a secret is printed: %s", out)
	}
	if !strings.Contains(out, "alice") {
		t.Fatalf("the user is not named: %s", out)
	}
}
