/** Specs to start from on the new batch change screen; each runs with `runtime: local` too. */
export interface ExampleSpec {
  id: string;
  label: string;
  source: string;
}

export const exampleSpecs: readonly ExampleSpec[] = [
  {
    id: "readme-note",
    label: "Add a note to every README",
    source: `version: 3
name: readme-note
description: Add a maintenance note to every README
on:
  - repositoriesMatchingQuery: file:README.md
steps:
  - run: printf '\\nMaintained by the platform team.\\n' >> README.md
    image: alpine:3
changesetTemplate:
  title: Add a maintenance note
  body: Adds a maintenance note to the README of \${{ repository.name }}.
  branch: batch/readme-note
  commit:
    message: Add a maintenance note to the README
`,
  },
  {
    id: "editorconfig",
    label: "Add an .editorconfig",
    source: `version: 3
name: editorconfig
description: Give every repository the same .editorconfig
on:
  - repositoriesMatchingQuery: file:README.md
steps:
  - run: |
      cat > .editorconfig <<'CONFIG'
      root = true

      [*]
      indent_style = space
      indent_size = 2
      CONFIG
    image: alpine:3
changesetTemplate:
  title: Add an .editorconfig
  body: One indentation style for \${{ repository.name }}.
  branch: batch/editorconfig
  commit:
    message: Add an .editorconfig
`,
  },
  {
    id: "package-license",
    label: "Set the license in package.json",
    source: `version: 3
name: package-license
description: Every package is Apache-2.0
on:
  - repositoriesMatchingQuery: file:package.json
steps:
  - run: |
      sed -i 's/"license": *"[^"]*"/"license": "Apache-2.0"/' package.json
    image: alpine:3
changesetTemplate:
  title: License the package as Apache-2.0
  body: Sets \`license\` in package.json of \${{ repository.name }}.
  branch: batch/package-license
  commit:
    message: Set the package license to Apache-2.0
  published: draft
`,
  },
];
