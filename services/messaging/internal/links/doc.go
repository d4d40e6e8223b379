// Package links makes and checks short-link codes; pkg/textlinks finds the addresses they
// stand for.
package links
