module github.com/chorus-sms/chorus/deploy

go 1.26.0

replace (
	github.com/chorus-sms/chorus/cmd => ../cmd
	github.com/chorus-sms/chorus/gateway => ../gateway
	github.com/chorus-sms/chorus/pkg => ../pkg
	github.com/chorus-sms/chorus/proto/gen/go => ../proto/gen/go
	github.com/chorus-sms/chorus/services/billing => ../services/billing
	github.com/chorus-sms/chorus/services/campaigns => ../services/campaigns
	github.com/chorus-sms/chorus/services/contacts => ../services/contacts
	github.com/chorus-sms/chorus/services/messaging => ../services/messaging
	github.com/chorus-sms/chorus/services/orgs => ../services/orgs
	github.com/chorus-sms/chorus/services/polls => ../services/polls
)

require (
	github.com/chorus-sms/chorus/pkg v0.0.0
	github.com/google/go-containerregistry v0.22.1
)

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
)
