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

func TestWrapKeepsTextAndChainAndMatchesErrCorruption(t *testing.T) {
	base := errors.New("metadata file")
	inner := fmt.Errorf("%w: decode x.json: unexpected end", base)
	err := fmt.Errorf("loading: %w", Wrap(inner))
	if !errors.Is(err, ErrCorruption) || !errors.Is(err, base) {
		t.Fatalf("errors.Is(%v) misses ErrCorruption or the wrapped chain", err)
	}
	if err.Error() != "loading: metadata file: decode x.json: unexpected end" {
		t.Fatalf("text %q", err.Error())
	}
	if Wrap(nil) != nil {
		t.Fatal("Wrap(nil) != nil")
	}
	if errors.Is(inner, ErrCorruption) {
		t.Fatal("the unwrapped error matches ErrCorruption")
	}
}
