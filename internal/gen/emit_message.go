package gen

import "google.golang.org/protobuf/compiler/protogen"

// genMessageTree emits m, then its nested enums and messages.
func genMessageTree(g *protogen.GeneratedFile, m *protogen.Message) error {
	for _, e := range m.Enums {
		genEnum(g, e)
	}
	for _, nm := range m.Messages {
		if nm.Desc.IsMapEntry() {
			continue
		}
		if err := genMessageTree(g, nm); err != nil {
			return err
		}
	}
	return nil
}
