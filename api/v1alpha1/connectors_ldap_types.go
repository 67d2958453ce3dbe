package v1alpha1

// LDAPConnectorSpec is the directory of a connector of type ldap (spec.auth.connectors[].ldap, D75): an
// LDAP directory or Active Directory, searched by a service account whose password is a Secret's key
// (bindPasswordRef, mounted as a file). The connection is always TLS here: LDAPS or StartTLS. The auth
// service also takes plain LDAP to a loopback host (a test directory on the same machine), which a
// cluster's directory never is, so the CRD simply refuses plain LDAP.
// +kubebuilder:validation:XValidation:rule="!has(self.groupSearch) || !has(self.userSearch.groupsAttr)",message="groupSearch and userSearch.groupsAttr both read groups; choose one"
type LDAPConnectorSpec struct {
	// Host is the directory's host[:port] (a DNS name or an IPv4 address; default port 636 for ldaps,
	// 389 for starttls).
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$`
	Host string `json:"host"`
	// TLS is ldaps (the default: TLS from the first byte) or starttls (plain LDAP upgraded before anything
	// is sent). Plain LDAP is refused: passwords travel in the bind.
	// +optional
	// +kubebuilder:validation:Enum=ldaps;starttls
	TLS string `json:"tls,omitempty"`
	// RootCARef names a Secret's key holding the PEM CAs that sign the directory's certificate
	// (default: the system's), mounted as a file.
	// +optional
	RootCARef *SecretKeySelector `json:"rootCARef,omitempty"`
	// BindDN is the service account that searches the directory.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.;-]+=`
	BindDN string `json:"bindDN"`
	// BindPasswordRef names the key of a Secret holding the service account's password, mounted into the
	// auth pods as a file; a missing Secret or key is Degraded (ConnectorSecretMissing).
	BindPasswordRef SecretKeySelector `json:"bindPasswordRef"`
	// UsernamePrompt is the label of the username field (default "Username").
	// +optional
	// +kubebuilder:validation:MaxLength=64
	UsernamePrompt string `json:"usernamePrompt,omitempty"`
	// UserSearch finds the person's entry by the username typed.
	UserSearch LDAPUserSearchSpec `json:"userSearch"`
	// GroupSearch finds the groups whose memberAttr holds the person's DN.
	// +optional
	GroupSearch *LDAPGroupSearchSpec `json:"groupSearch,omitempty"`
}

// LDAPUserSearchSpec finds a person (docs/auth.md, "LDAP and Active Directory"; defaults in brackets).
type LDAPUserSearchSpec struct {
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.;-]+=`
	BaseDN string `json:"baseDN"`
	// Filter every person's entry matches [(objectClass=person)].
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^\(.*\)$`
	Filter string `json:"filter,omitempty"`
	// Username is the attribute compared with the username typed [uid; AD: sAMAccountName].
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9.;-]{0,63}$`
	Username string `json:"username,omitempty"`
	// IDAttr names the entry for good [entryUUID; AD: objectGUID].
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9.;-]{0,63}$`
	IDAttr string `json:"idAttr,omitempty"`
	// EmailAttr [mail].
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9.;-]{0,63}$`
	EmailAttr string `json:"emailAttr,omitempty"`
	// NameAttr [cn].
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9.;-]{0,63}$`
	NameAttr string `json:"nameAttr,omitempty"`
	// GroupsAttr lists the DNs of the person's groups (memberOf); each group's name is its DN's first
	// value.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9.;-]{0,63}$`
	GroupsAttr string `json:"groupsAttr,omitempty"`
}

// LDAPGroupSearchSpec finds a person's groups (defaults in brackets).
type LDAPGroupSearchSpec struct {
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.;-]+=`
	BaseDN string `json:"baseDN"`
	// Filter every group matches [(objectClass=groupOfNames)].
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^\(.*\)$`
	Filter string `json:"filter,omitempty"`
	// MemberAttr holds the members' DNs [member].
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9.;-]{0,63}$`
	MemberAttr string `json:"memberAttr,omitempty"`
	// NameAttr is the group's name [cn].
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9.;-]{0,63}$`
	NameAttr string `json:"nameAttr,omitempty"`
}
