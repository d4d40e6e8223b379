package store

// SetExportBatch makes s's ExportConsent read n entries per query, so a test puts a batch's
// boundary where it wants with a few entries.
func SetExportBatch(s *Store, n int) { s.exportBatch = n }
