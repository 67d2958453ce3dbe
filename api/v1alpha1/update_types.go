package v1alpha1

// ApproveUpgradeAnnotation on a FormsService with updatePolicy.mode Manual names the image its services
// may move to (status.pendingImage): the team's approval of that upgrade, and of no other.
const ApproveUpgradeAnnotation = "platform.formsservice.io/approve-upgrade"

// Update modes of spec.updatePolicy.mode.
const (
	UpdateModeAutomatic = "Automatic"
	UpdateModeManual    = "Manual"
)

// UpdatePolicy says when an operator upgrade may move a FormsService without spec.image to the
// operator's new services' image.
type UpdatePolicy struct {
	// Mode Automatic (the default) moves the services as soon as a slot of --max-concurrent-upgrades is
	// free; Manual keeps the running image until the FormsService carries the annotation
	// platform.formsservice.io/approve-upgrade naming the new image (status.pendingImage).
	// +optional
	// +kubebuilder:validation:Enum=Automatic;Manual
	// +kubebuilder:default=Automatic
	Mode string `json:"mode,omitempty"`
	// MaintenanceWindows are the times, in UTC, in which an operator upgrade of this FormsService may
	// begin: "Sat:01:00-05:00" (on that weekday) or "01:00-05:00" (every day); a window whose end is
	// before its start runs past midnight. Empty: any time. A rollout that began in a window finishes
	// after it closes; with mode Manual, an approved upgrade waits for the next window too.
	// +optional
	// +kubebuilder:validation:MaxItems=14
	// +listType=atomic
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`
}

// MaintenanceWindow is "[Day:]HH:MM-HH:MM" in UTC (controllers/maintenance reads it; its Pattern is
// this pattern).
// +kubebuilder:validation:MaxLength=15
// +kubebuilder:validation:Pattern=`^((Mon|Tue|Wed|Thu|Fri|Sat|Sun):)?([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$`
// +kubebuilder:validation:XValidation:rule="self.split('-')[0].substring(self.split('-')[0].size() - 5) != self.split('-')[1]",message="a maintenance window must not open and close at the same minute"
type MaintenanceWindow string

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
