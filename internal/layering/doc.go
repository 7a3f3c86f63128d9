// Package layering owns the rule of which Spool package may import which.
// It has no code of its own: its test reads every package of the module
// (non-test files only) and fails when a package imports a module package
// outside its allowed set. docs/design.md draws the same table; change
// both together.
package layering
