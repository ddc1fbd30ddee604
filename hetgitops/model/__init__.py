"""Model stage: schema-valid Documents -> the frozen, immutable Policy.

Takes the load stage's Documents. Checks each against its JSON Schema (`schemas/`), then builds
frozen dataclasses that remember their policy origin. Also the value domains the model is made
of: Kubernetes quantities, node ranges (`gpu-[001:064]`) and the MIG profile catalogue; and the
card-type catalogue `init` and `import` share (`catalogue`). Gives `Policy`; imports only the
load stage.
"""
