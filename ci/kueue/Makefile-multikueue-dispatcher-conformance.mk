# For Kueue's Makefile-test.mk: `make test-multikueue-dispatcher-conformance` judges the
# MultiKueue dispatchers of this tree with mkdc (hack/testing/
# run-multikueue-dispatcher-conformance.sh says which variables it reads).

.PHONY: test-multikueue-dispatcher-conformance
test-multikueue-dispatcher-conformance: ## Judge the MultiKueue dispatchers with mkdc's conformance suite.
	ARTIFACTS="$(ARTIFACTS)" $(PROJECT_DIR)/hack/testing/run-multikueue-dispatcher-conformance.sh
