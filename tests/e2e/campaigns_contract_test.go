package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A campaign's fromPhoneNumberId is always a UUID: a draft naming no number gets the
// organization's default when it is created; a draft of an organization without numbers has
// no fromPhoneNumberId and a null phoneNumber, and sends from the default once one exists.
func TestCampaignFromNumberIsTheDefaultsUUID(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550232", 10)

	d := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "Numbered"}), http.StatusCreated)
	assert.Equal(t, tn.numberID, d.str("fromPhoneNumberId"), "the default, fixed when the draft is created")
	got := tn.getCampaign(d.str("id"))
	assert.Equal(t, tn.numberID, got.str("fromPhoneNumberId"))
	require.NotNil(t, got["phoneNumber"])
	assert.Equal(t, tn.numberID, got["phoneNumber"].(map[string]any)["id"])

	bare := e.newTenant("", 10)
	d = campaignOf(t, bare.do("POST", "/api/campaigns/draft", map[string]any{"name": "Unnumbered"}), http.StatusCreated)
	id := d.str("id")
	assert.NotContains(t, d, "fromPhoneNumberId", "no number exists: no id, never a non-UUID")
	got = bare.getCampaign(id)
	assert.NotContains(t, got, "fromPhoneNumberId")
	assert.Contains(t, got, "phoneNumber")
	assert.Nil(t, got["phoneNumber"], "null only where no number exists")

	number := bare.addNumber("+13125550233", true)
	got = bare.getCampaign(id)
	assert.Equal(t, number, got.str("fromPhoneNumberId"), "the default once there is one")
	require.NotNil(t, got["phoneNumber"])
	assert.Equal(t, number, got["phoneNumber"].(map[string]any)["id"])
	d = campaignOf(t, bare.do("PUT", "/api/campaigns/"+id+"/draft", map[string]any{"message": "Hi"}), http.StatusOK)
	assert.Equal(t, number, d.str("fromPhoneNumberId"), "an updated draft is given the default")
}
