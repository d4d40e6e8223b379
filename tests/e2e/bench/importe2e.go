package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// benchImportE2E is POST /api/contacts/imports as a user gets it: a CSV file of n new contacts
// uploaded through the stack as make run starts it, timed from the first byte sent to the
// import's status completed (GET /api/contacts/imports/{id}), against a raw COPY of the same
// rows into a scratch table of the contacts table's shape (columns, constraints, indexes) on
// the same database, in the same run. It also prints bin/chorus's resident set before and at
// its peak: the file is streamed, so memory stays flat whatever n. Where the server preloads
// pg_stat_statements, it lists the statements that took the most time, per row.
func benchImportE2E(ctx context.Context, n int) error {
	p, org, day, err := startE2EOrg(ctx, "import", 13)
	if err != nil {
		return err
	}
	defer p.stop()
	dir, err := os.MkdirTemp("", "chorus-import-e2e")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file, raw := filepath.Join(dir, "contacts.csv"), filepath.Join(dir, "raw.csv")
	if err := writeImportFiles(file, raw, org.id, day, n); err != nil {
		return err
	}
	fmt.Printf("\nimport-e2e: %d new contacts in one CSV file...\n", n)

	dsn, err := ensureDatabase(ctx, p.db, false)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS bench_scratch CASCADE; CREATE SCHEMA bench_scratch;
		CREATE TABLE bench_scratch.contacts (LIKE contacts.contacts INCLUDING ALL)`); err != nil {
		return err
	}
	f, err := os.Open(raw)
	if err != nil {
		return err
	}
	start := time.Now()
	_, err = conn.PgConn().CopyFrom(ctx, f, `COPY bench_scratch.contacts (id, organization_id, phone, email, first_name,
		last_name, city, state, zip, timezone, tags, custom_fields) FROM STDIN (FORMAT csv)`)
	f.Close()
	if err != nil {
		return fmt.Errorf("raw copy: %w", err)
	}
	rawRate := float64(n) / time.Since(start).Seconds()

	c := p.client(org, 1)
	stmts := newStatements(ctx, p.db)
	defer stmts.close()
	before := readUsage()
	start = time.Now()
	imp, err := uploadImport(ctx, c, file)
	if err != nil {
		return err
	}
	uploaded := time.Since(start)
	for imp.Status == "queued" || imp.Status == "running" {
		time.Sleep(200 * time.Millisecond)
		if err := c.send(ctx, "GET", "/api/contacts/imports/"+imp.ID, nil, &imp); err != nil {
			return err
		}
	}
	took := time.Since(start)
	after := readUsage()
	if imp.Status != "completed" || int(imp.Created) != n {
		return fmt.Errorf("import-e2e: the import ended %s with %d created of %d (%d rejected)", imp.Status, imp.Created, n, imp.Rejected)
	}
	rate := float64(n) / took.Seconds()
	fmt.Printf("%-44s %8.0f rows/s (%.1fs; upload and staging %.1fs)\n", "import-e2e, POST /api/contacts/imports", rate, took.Seconds(), uploaded.Seconds())
	fmt.Printf("%-44s %8.0f rows/s\n", "  raw COPY of the same rows", rawRate)
	fmt.Printf("%-44s %8.3fx (target: 0.5 or more)\n", "  ratio", rate/rawRate)
	fmt.Printf("%-44s %d MB before, %d MB at its peak; %d lookups still pending\n", "  bin/chorus resident set",
		before.peakRSS/1024, after.peakRSS/1024, imp.LookupsPending)
	stmts.print(ctx, n)
	return nil
}

// importState is the part of GET /api/contacts/imports/{id} the bench reads.
type importState struct {
	ID             string
	Status         string
	Created        int32
	Rejected       int32
	LookupsPending int32
}

// uploadImport posts the file as the request body, streamed from disk, its length declared.
func uploadImport(ctx context.Context, c *apiClient, path string) (importState, error) {
	var imp importState
	f, err := os.Open(path)
	if err != nil {
		return imp, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return imp, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+"/api/contacts/imports", f)
	if err != nil {
		return imp, err
	}
	req.ContentLength = info.Size() // declared, as curl --data-binary @file and browsers send a file
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("x-organization-id", c.org)
	req.Header.Set("Content-Type", "text/csv")
	res, err := c.http.Do(req)
	if err != nil {
		return imp, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return imp, err
	}
	if res.StatusCode != http.StatusAccepted {
		return imp, fmt.Errorf("POST /api/contacts/imports: %s: %s", res.Status, body)
	}
	return imp, json.Unmarshal(body, &imp)
}

// writeImportFiles writes the same n contacts twice: as the import file, and as COPY rows of
// the contacts table (with ids and the organization) for the baseline.
func writeImportFiles(file, raw, org, zone string, n int) error {
	ff, err := os.Create(file)
	if err != nil {
		return err
	}
	defer ff.Close()
	rf, err := os.Create(raw)
	if err != nil {
		return err
	}
	defer rf.Close()
	fw, rw := bufio.NewWriter(ff), bufio.NewWriter(rf)
	fmt.Fprintln(fw, "phone,email,firstName,lastName,city,state,zip,timezone,tags,team")
	for i := range n {
		phone := fmt.Sprintf("+1720%03d%04d", 200+i/9000, 1000+i%9000)
		email := fmt.Sprintf("c%d@example.com", i)
		first, last := firstNames[i%len(firstNames)], lastNames[i%len(lastNames)]
		fmt.Fprintf(fw, "%s,%s,%s,%s,Denver,CO,80202,%s,import;bench,t%d\n", phone, email, first, last, zone, i%10)
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		fmt.Fprintf(rw, "%s,%s,%s,%s,%s,%s,Denver,CO,80202,%s,\"{import,bench}\",\"{\"\"team\"\": \"\"t%d\"\"}\"\n",
			id, org, phone, email, first, last, zone, i%10)
	}
	if err := fw.Flush(); err != nil {
		return err
	}
	return rw.Flush()
}
