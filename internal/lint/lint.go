// Package lint holds no code: its test enforces the import rules of
// DESIGN.md §2 on the repository, so a forbidden import fails the build's
// tests rather than a review.
package lint
