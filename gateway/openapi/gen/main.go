// Command gen writes the gateway's OpenAPI 3 document (gateway/openapi/openapi.json) at `make
// generate`: it converts the Swagger 2 document protoc-gen-openapiv2 writes from the protos
// and HTTP rules, then adds what those cannot say from overlay.yaml (success and error
// statuses, headers, the routes outside /api) and from the proto descriptors (which fields are
// null when unset, which are always present, that no other field is). So the document follows
// the protos without anyone editing it by hand.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/chorus-sms/chorus/proto/gen/go/analytics/v1"
	_ "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	_ "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	_ "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	_ "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	_ "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	_ "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
	_ "github.com/chorus-sms/chorus/proto/gen/go/webhooks/v1"
)

func main() {
	swagger := flag.String("swagger", ".gen/openapiv2/chorus.swagger.json", "protoc-gen-openapiv2's merged output")
	rules := flag.String("rules", "gateway/http_rules.yaml", "the HTTP rules (for body and response_body)")
	overlayPath := flag.String("overlay", "gateway/openapi/overlay.yaml", "what the protos cannot say")
	out := flag.String("out", "gateway/openapi/openapi.json", "the OpenAPI 3 document to write")
	flag.Parse()
	if err := run(*swagger, *rules, *overlayPath, *out); err != nil {
		log.Fatalf("openapi gen: %v", err)
	}
}

// overlay is overlay.yaml.
type overlay struct {
	APIErrors  []int                `yaml:"apiErrors"`
	PostErrors []int                `yaml:"postErrors"`
	Operations map[string]operation `yaml:"operations"`
	Nullable   []string             `yaml:"nullable"`
	// FieldSchemas and the raw OpenAPI parts stay generic: they are re-read as kin-openapi types.
	FieldSchemas map[string]any `yaml:"fieldSchemas"`
	Components   map[string]any `yaml:"components"`
	Paths        map[string]any `yaml:"paths"`
}

type operation struct {
	Success map[int]string `yaml:"success"`
	Errors  []int          `yaml:"errors"`
}

// httpRules is the part of http_rules.yaml that shapes responses.
type httpRules struct {
	HTTP struct {
		Rules []struct {
			Selector     string `yaml:"selector"`
			Body         string `yaml:"body"`
			ResponseBody string `yaml:"response_body"`
		} `yaml:"rules"`
	} `yaml:"http"`
}

func run(swaggerPath, rulesPath, overlayPath, outPath string) error {
	var doc2 openapi2.T
	if err := readJSON(swaggerPath, &doc2); err != nil {
		return err
	}
	doc, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		return fmt.Errorf("convert to OpenAPI 3: %w", err)
	}
	var ov overlay
	if err := readYAML(overlayPath, &ov); err != nil {
		return err
	}
	var rules httpRules
	if err := readYAML(rulesPath, &rules); err != nil {
		return err
	}
	responseBody, requestBody := map[string]string{}, map[string]string{}
	for _, r := range rules.HTTP.Rules {
		responseBody[r.Selector] = r.ResponseBody
		requestBody[r.Selector] = r.Body
	}

	if err := mergeComponents(doc, ov.Components); err != nil {
		return err
	}
	doc.Security = nil // set per operation: the routes outside /api need no token
	a := &annotator{
		nullable:     setOf(ov.Nullable),
		fieldSchemas: map[string]*openapi3.SchemaRef{},
		done:         map[*openapi3.Schema]bool{},
	}
	for name, raw := range ov.FieldSchemas {
		s := &openapi3.SchemaRef{}
		if err := remarshal(raw, s); err != nil {
			return fmt.Errorf("fieldSchemas %s: %w", name, err)
		}
		a.fieldSchemas[name] = s
	}

	seen := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ovOp, ok := ov.Operations[op.OperationID]
			if !ok {
				return fmt.Errorf("%s %s: operation %s is not in the overlay", method, path, op.OperationID)
			}
			seen[op.OperationID] = true
			md, err := findMethod(op.OperationID)
			if err != nil {
				return err
			}
			if err := a.apiOperation(op, md, requestBody[string(md.FullName())], responseBody[string(md.FullName())], ovOp, ov.APIErrors); err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
			if method == http.MethodPost {
				idempotent(op, ov.PostErrors)
			}
		}
	}
	for id := range ov.Operations {
		if !seen[id] {
			return fmt.Errorf("overlay names operation %s, which the HTTP rules do not route", id)
		}
	}
	if err := addPaths(doc, ov.Paths); err != nil {
		return err
	}

	doc.Info.Description = "Multi-organization SMS/MMS messaging (docs/api-spec.md). Every /api request carries " +
		"`Authorization: Bearer <JWT>` and `x-organization-id`. Every error answers the Error body. A method a path " +
		"does not accept answers 405 with an Allow header (components.responses.405); a path the gateway does not " +
		"serve answers 404 (components.responses.404). Fields are null only where a schema says nullable."
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	// What is written must load and validate as the e2e harness will read it.
	loaded, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return fmt.Errorf("reload the document: %w", err)
	}
	if err := loaded.Validate(context.Background()); err != nil {
		return fmt.Errorf("the document is not valid OpenAPI 3: %w", err)
	}
	return os.WriteFile(outPath, b, 0o644)
}

// apiOperation finishes one /api operation: its statuses, the auth it needs, and the schemas
// of its request and responses.
func (a *annotator) apiOperation(op *openapi3.Operation, md protoreflect.MethodDescriptor, requestBody, responseBody string, ov operation, apiErrors []int) error {
	ok := op.Responses.Status(http.StatusOK)
	if ok == nil || ok.Value == nil {
		return fmt.Errorf("no 200 response to start from")
	}
	success := ov.Success
	if len(success) == 0 {
		success = map[int]string{http.StatusOK: "OK."}
	}
	// Every success status answers the body the rules map the method's output to.
	out := md.Output()
	body := ok.Value.Content.Get("application/json")
	if body == nil || body.Schema == nil {
		return fmt.Errorf("200 response has no JSON schema")
	}
	if responseBody != "" {
		f := out.Fields().ByName(protoreflect.Name(responseBody))
		if f == nil {
			return fmt.Errorf("response_body %s is not a field of %s", responseBody, out.FullName())
		}
		s := body.Schema
		if f.IsList() {
			s = s.Value.Items
		}
		a.message(s, f.Message(), true)
	} else {
		a.message(body.Schema, out, true)
	}
	responses := openapi3.NewResponses()
	responses.Delete("default")
	for code, desc := range success {
		responses.Set(strconv.Itoa(code), &openapi3.ResponseRef{Value: &openapi3.Response{
			Description: openapi3.Ptr(desc), Content: ok.Value.Content,
		}})
	}
	for _, code := range append(slices.Clone(apiErrors), ov.Errors...) {
		responses.Set(strconv.Itoa(code), errorRef(code))
	}
	op.Responses = responses

	if op.RequestBody != nil && op.RequestBody.Value != nil {
		if c := op.RequestBody.Value.Content.Get("application/json"); c != nil && c.Schema != nil {
			// body "*" is the whole request message; body "field" is that field's message.
			in := md.Input()
			if requestBody != "" && requestBody != "*" {
				f := in.Fields().ByName(protoreflect.Name(requestBody))
				if f == nil || f.Message() == nil {
					return fmt.Errorf("body %s is not a message field of %s", requestBody, in.FullName())
				}
				in = f.Message()
			}
			a.message(c.Schema, in, false)
		}
	}
	op.Parameters = append(op.Parameters, &openapi3.ParameterRef{Ref: "#/components/parameters/OrganizationId"})
	op.Security = &openapi3.SecurityRequirements{{"bearer": {}}}
	return nil
}

// idempotent declares the Idempotency-Key of a POST (gateway/idempotency.go): the request
// header, Idempotent-Replayed on its success answers, and the errors the key adds.
func idempotent(op *openapi3.Operation, errors []int) {
	op.Parameters = append(op.Parameters, &openapi3.ParameterRef{Ref: "#/components/parameters/IdempotencyKey"})
	for code, r := range op.Responses.Map() {
		if r.Value != nil && strings.HasPrefix(code, "2") {
			r.Value.Headers = openapi3.Headers{"Idempotent-Replayed": {Ref: "#/components/headers/IdempotentReplayed"}}
		}
	}
	for _, code := range errors {
		op.Responses.Set(strconv.Itoa(code), errorRef(code))
	}
}

func errorRef(code int) *openapi3.ResponseRef {
	return &openapi3.ResponseRef{Ref: "#/components/responses/" + strconv.Itoa(code)}
}

// annotator marks schemas from the messages they print.
type annotator struct {
	nullable     map[string]bool
	fieldSchemas map[string]*openapi3.SchemaRef
	done         map[*openapi3.Schema]bool
}

// message makes s, the schema of md, exact: no properties but md's fields, the nullable ones
// marked, and (on a response) every field required, since the gateway prints unset fields.
// A schema reached from a request is not required-marked: requests send what they like.
func (a *annotator) message(ref *openapi3.SchemaRef, md protoreflect.MessageDescriptor, response bool) {
	if ref == nil || ref.Value == nil || md.FullName().Parent() == "google.protobuf" {
		return
	}
	s := ref.Value
	if a.done[s] {
		if !response {
			s.Required = nil // shared with a request body: nothing in it is required
		}
		return
	}
	a.done[s] = true
	s.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
	var required []string
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		name := f.JSONName()
		prop, ok := s.Properties[name]
		if !ok {
			continue // a path parameter, not in the body
		}
		full := string(f.FullName())
		if fs, ok := a.fieldSchemas[full]; ok {
			desc := prop.Value.Description
			prop = &openapi3.SchemaRef{Value: cloneSchema(fs.Value)}
			prop.Value.Description = desc
			s.Properties[name] = prop
		}
		if f.Kind() == protoreflect.MessageKind && !f.IsMap() {
			target := prop
			if f.IsList() {
				target = prop.Value.Items
			}
			a.message(target, f.Message(), response)
		}
		if isWrapper(f) || a.nullable[full] {
			if prop.Ref != "" {
				// A $ref takes no siblings in OpenAPI 3.0: wrap it.
				prop = &openapi3.SchemaRef{Value: &openapi3.Schema{AllOf: openapi3.SchemaRefs{prop}, Nullable: true}}
				s.Properties[name] = prop
			} else {
				prop.Value.Nullable = true
			}
		}
		if response && !f.HasOptionalKeyword() {
			required = append(required, name)
		}
	}
	if response {
		s.Required = required
	}
}

func cloneSchema(s *openapi3.Schema) *openapi3.Schema {
	c := *s
	return &c
}

// isWrapper reports a google.protobuf.*Value field: the gateway prints null when it is unset.
func isWrapper(f protoreflect.FieldDescriptor) bool {
	if f.Kind() != protoreflect.MessageKind || f.IsList() {
		return false
	}
	n := f.Message().FullName()
	return n.Parent() == "google.protobuf" && strings.HasSuffix(string(n.Name()), "Value") &&
		n.Name() != "ListValue" && n.Name() != "Value"
}

// findMethod finds the RPC of an operation id ("ContactsService_ListContacts").
func findMethod(operationID string) (protoreflect.MethodDescriptor, error) {
	svc, method, ok := strings.Cut(operationID, "_")
	if !ok {
		return nil, fmt.Errorf("operation id %q is not Service_Method", operationID)
	}
	var found protoreflect.MethodDescriptor
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "chorus.") {
			return true
		}
		if sd := fd.Services().ByName(protoreflect.Name(svc)); sd != nil {
			found = sd.Methods().ByName(protoreflect.Name(method))
		}
		return found == nil
	})
	if found == nil {
		return nil, fmt.Errorf("operation %s: no such RPC in the chorus protos", operationID)
	}
	return found, nil
}

// mergeComponents adds the overlay's components to the converted ones and replaces the Swagger
// 2 security definition with the overlay's.
func mergeComponents(doc *openapi3.T, raw map[string]any) error {
	var c openapi3.Components
	if err := remarshal(raw, &c); err != nil {
		return fmt.Errorf("overlay components: %w", err)
	}
	if doc.Components.Schemas == nil {
		doc.Components.Schemas = openapi3.Schemas{}
	}
	maps.Copy(doc.Components.Schemas, c.Schemas)
	doc.Components.SecuritySchemes = c.SecuritySchemes
	doc.Components.Parameters = c.Parameters
	doc.Components.Responses = c.Responses
	doc.Components.Headers = c.Headers
	return nil
}

// addPaths adds the routes outside /api. Their x-errors become references to the shared error
// responses, and each GET outside /api is also declared as HEAD, which the gateway serves alike.
func addPaths(doc *openapi3.T, raw map[string]any) error {
	for path, rawItem := range raw {
		item := &openapi3.PathItem{}
		if err := remarshal(rawItem, item); err != nil {
			return fmt.Errorf("overlay path %s: %w", path, err)
		}
		for _, op := range item.Operations() {
			codes, _ := op.Extensions["x-errors"].([]any)
			delete(op.Extensions, "x-errors")
			for _, c := range codes {
				code, ok := c.(float64)
				if !ok {
					return fmt.Errorf("overlay path %s: x-errors holds %v, not a status", path, c)
				}
				op.Responses.Set(strconv.Itoa(int(code)), errorRef(int(code)))
			}
			op.Security = &openapi3.SecurityRequirements{}
			if strings.HasPrefix(path, "/api/") {
				// A route of the gateway's own under /api (the CSV export): authenticated as
				// every /api operation.
				op.Parameters = append(op.Parameters, &openapi3.ParameterRef{Ref: "#/components/parameters/OrganizationId"})
				op.Security = &openapi3.SecurityRequirements{{"bearer": {}}}
			}
		}
		if get := item.Get; get != nil && !strings.HasPrefix(path, "/api/") { // /api routes are GET only, as the mux's
			head := *get
			head.OperationID = get.OperationID + "Head"
			head.Responses = openapi3.NewResponses()
			head.Responses.Delete("default")
			for code, r := range get.Responses.Map() {
				if r.Ref != "" {
					head.Responses.Set(code, r)
					continue
				}
				// A HEAD answer has the GET's status and headers and no body.
				v := *r.Value
				v.Content = nil
				head.Responses.Set(code, &openapi3.ResponseRef{Value: &v})
			}
			item.Head = &head
		}
		doc.Paths.Set(path, item)
	}
	return nil
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// remarshal turns YAML-decoded data into a kin-openapi type through its JSON form.
func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
