package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func TestLastNominatedReadsItsOwnStatusWriteRoundedUp(t *testing.T) {
	written := time.Date(2026, 12, 6, 3, 0, 7, 0, time.UTC)
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "example-dispatcher", Operation: metav1.ManagedFieldsOperationApply, Time: &metav1.Time{Time: written.Add(-time.Minute)}},
		{Manager: "kueue-admission", Subresource: "status", Time: &metav1.Time{Time: written.Add(time.Minute)}},
		{Manager: "example-dispatcher", Subresource: "status", Operation: metav1.ManagedFieldsOperationApply, Time: &metav1.Time{Time: written}},
	}}}
	if got, want := lastNominated(wl, "example-dispatcher"), written.Add(time.Second); !got.Equal(want) {
		t.Fatalf("lastNominated = %v, want %v (its status entry, rounded up)", got, want)
	}
	if got := lastNominated(wl, "another-dispatcher"); !got.IsZero() {
		t.Fatalf("lastNominated of a manager that never wrote = %v, want zero", got)
	}
}
