package v1alpha1

// OperandStatus says which services' image a FormsService runs, and which one it waits to run: the
// operator's own image changes with every operator upgrade, and at most --max-concurrent-upgrades
// FormsServices move to it at once (docs/operator.md, "Upgrading a fleet").
type OperandStatus struct {
	// OperandVersion is the services' image (a reference, e.g. ghcr.io/formsservice/formsservice:1.4.0)
	// that every Deployment of this FormsService has fully rolled out: updated, available, no old pods.
	// It changes only when a rollout finishes.
	// +optional
	OperandVersion string `json:"operandVersion,omitempty"`
	// PendingImage is the operator's service image this FormsService does not run yet because its
	// upgrade waits for a slot (Progressing, reason UpgradeQueued); empty when none waits.
	// +optional
	PendingImage string `json:"pendingImage,omitempty"`
}
