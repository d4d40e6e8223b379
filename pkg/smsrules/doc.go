// Package smsrules holds the rules every outgoing text obeys, whichever service sends it:
// its characters (Normalize), its length (MaxTextLength), its price (Credits) and the media
// URLs it may carry (PublicMediaURL). Messaging, campaigns and polls all ask it, so a text one
// service accepts the others accept too.
package smsrules
