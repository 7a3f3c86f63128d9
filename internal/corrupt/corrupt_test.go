package corrupt

import (
	"errors"
	"fmt"
	"testing"
)

func TestNewMatchesItselfAndErrCorruption(t *testing.T) {
	a, b := New("a: corruption"), New("b: corruption")
	err := fmt.Errorf("reading x: %w", a)
	if !errors.Is(err, a) || !errors.Is(err, ErrCorruption) {
		t.Fatalf("errors.Is(%v) misses a or ErrCorruption", err)
	}
	if errors.Is(err, b) {
		t.Fatalf("errors.Is(%v, b) = true, want false", err)
	}
	if a.Error() != "a: corruption" {
		t.Fatalf("text %q", a.Error())
	}
	if errors.Is(errors.New("other"), ErrCorruption) {
		t.Fatal("an unrelated error matches ErrCorruption")
	}
}
