module github.com/chorus-sms/chorus/cmd

go 1.26.0

replace (
	github.com/chorus-sms/chorus/gateway => ../gateway
	github.com/chorus-sms/chorus/pkg => ../pkg
	github.com/chorus-sms/chorus/proto/gen/go => ../proto/gen/go
	github.com/chorus-sms/chorus/services/contacts => ../services/contacts
	github.com/chorus-sms/chorus/services/orgs => ../services/orgs
)

require github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
