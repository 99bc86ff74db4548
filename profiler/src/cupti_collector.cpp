// Placeholder: implemented by its owner.
