// Package assess estimates what deduplicating a collection would save
// before anything is rewritten.
package assess
